/* testutil.h - helpers shared by the Check suites. */
#ifndef GC_TESTUTIL_H
#define GC_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* Whole file as a NUL-terminated malloc'd string (NULL if unreadable). */
char *tu_read_file(const char *path, size_t *len);
/* Path under the source tree: tu_src("examples/mlp.graph"); static buffer ring. */
const char *tu_src(const char *rel);
/* A fresh temporary directory for this process (created once). */
const char *tu_tmpdir(void);
/* Run a Check suite; returns the process exit code (0 ok, 1 failures). */
int tu_run_suite(Suite *s);
/* Run a shell command, capture stdout+stderr into *out (malloc'd); returns exit status. */
int tu_run_cmd(const char *cmd, char **out);
/* tu_run_cmd of a printf-style command line; out may be NULL. */
int tu_sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A command that must exit 0 (its output in the failure message). */
#define TU_SH_OK(...)                                                   \
  do {                                                                  \
    char *o_ = NULL;                                                    \
    int rc_ = tu_sh(&o_, __VA_ARGS__);                                  \
    ck_assert_msg(rc_ == 0, "command failed (%d):\n%s", rc_, o_);       \
    free(o_);                                                           \
  } while (0)
/* A new empty directory under tu_tmpdir() named after tag (ring of 8 names). */
const char *tu_fresh_dir(const char *tag);
/* Write text to dir/name (fails the test when it cannot). */
void tu_write_text(const char *dir, const char *name, const char *text);
/* Flags that make a program built by a test match the suite's sanitizers. */
#ifdef __SANITIZE_ADDRESS__
#define TU_SAN_FLAGS " -fsanitize=address,undefined"
#else
#define TU_SAN_FLAGS ""
#endif

/* The library's settings as the environment says now (driver/settings.h): each call
 * reads them again (tests change the environment between calls) into a static copy
 * that the next call overwrites. For calls that take settings or a toolchain. */
struct gc_settings;
struct gc_rt_settings;
struct gc_toolchain;
const struct gc_settings *tu_settings(void);
const struct gc_rt_settings *tu_rt_settings(void);
/* Is there a CUDA device? (Probed in a child process: call it in main, before Check forks.) */
int tu_probe_device(void);
const struct gc_toolchain *tu_toolchain(void);

/* Source and build folders: compiled in, overridable with GRAPHC_TEST_SOURCE_DIR
 * and GRAPHC_TEST_BINARY_DIR (so a build folder can run on another machine). */
const char *tu_source_dir(void);
const char *tu_binary_dir(void);
const char *tu_cli(void);
#ifndef TU_IMPL
#undef GRAPHC_SOURCE_DIR
#undef GRAPHC_BINARY_DIR
#undef GRAPHC_CLI
#define GRAPHC_SOURCE_DIR tu_source_dir()
#define GRAPHC_BINARY_DIR tu_binary_dir()
#define GRAPHC_CLI tu_cli()
#endif

#endif
