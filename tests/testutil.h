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
