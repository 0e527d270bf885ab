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

#endif
