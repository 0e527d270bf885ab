/* testutil.c - helpers shared by the Check suites. */
#define TU_IMPL
#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver/cuda_backend.h"
#include "driver/settings.h"

char *tu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  if (!p) return NULL;
  p[n] = 0;
  if (len) *len = (size_t)n;
  return p;
}

const char *tu_source_dir(void) {
  const char *e = getenv("GRAPHC_TEST_SOURCE_DIR");
  return e && *e ? e : GRAPHC_SOURCE_DIR;
}

const char *tu_binary_dir(void) {
  const char *e = getenv("GRAPHC_TEST_BINARY_DIR");
  return e && *e ? e : GRAPHC_BINARY_DIR;
}

const char *tu_cli(void) {
  static char path[4096];
  if (getenv("GRAPHC_TEST_BINARY_DIR")) {
    snprintf(path, sizeof path, "%s/graphc", tu_binary_dir());
    return path;
  }
  return GRAPHC_CLI;
}

const char *tu_src(const char *rel) {
  static char ring[8][4096];
  static int k;
  char *b = ring[k++ & 7];
  snprintf(b, 4096, "%s/%s", tu_source_dir(), rel);
  return b;
}

const char *tu_tmpdir(void) {
  static char dir[256];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/graphc-test-XXXXXX");
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      abort();
    }
  }
  return dir;
}

int tu_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

int tu_run_cmd(const char *cmd, char **out) {
  char full[8192];
  snprintf(full, sizeof full, "(%s) 2>&1", cmd);
  FILE *p = popen(full, "r");
  if (!p) return -1;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (cap - len < 1024) {
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
  }
  if (buf) buf[len] = 0;
  int st = pclose(p);
  if (out)
    *out = buf;
  else
    free(buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tu_sh(char **out, const char *fmt, ...) {
  char cmd[16384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char *o = NULL;
  int rc = tu_run_cmd(cmd, &o);
  if (out)
    *out = o;
  else
    free(o);
  return rc;
}

const char *tu_fresh_dir(const char *tag) {
  static char buf[8][512];
  static int k, n;
  char *p = buf[k++ & 7];
  snprintf(p, 512, "%s/%s-%d-%d", tu_tmpdir(), tag, (int)getpid(), n++);
  ck_assert_int_eq(mkdir(p, 0700), 0);
  return p;
}

void tu_write_text(const char *dir, const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

/* The settings, read again at each call (testutil.h). */
const gc_settings *tu_settings(void) {
  static gc_settings s;
  gc_settings_read(&s);
  return &s;
}

/* The runtime's part of tu_settings. */
const gc_rt_settings *tu_rt_settings(void) { return &tu_settings()->rt; }

/* The toolkit locations of tu_settings, as the driver gives them to codegen. */
const gc_toolchain *tu_toolchain(void) {
  static gc_toolchain tc;
  gc_settings_toolchain(tu_settings(), &tc);
  return &tc;
}

/* Asked in a child so the test process never initializes CUDA (a CUDA context does not
 * survive fork, and Check forks every test). */
int tu_probe_device(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) _exit(gc_cuda_available(tu_rt_settings()) ? 0 : 1);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) < 0) return 0;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
