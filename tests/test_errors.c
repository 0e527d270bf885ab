/* test_errors.c - runs every tests/errors/NAME.graph (sorted) and checks its diagnostics.
 *
 * Each file starts with comment lines
 *     # expect: LINE:COL: SUBSTRING     (one per expected error, in any order)
 *     # bind: B=4,S=8                   (optional)
 * The runner parses the file; if it parsed, runs gc_verify_module; if there are
 * bind lines and still no errors, binds the symbolic dims of the first graph and
 * runs gc_graph_specialize, then (when that succeeded) gc_verify_graph. The
 * rendered diagnostics must hold exactly as many errors as expect lines, and for
 * each expect line "<path>:LINE:COL: error: <message containing SUBSTRING>",
 * followed by the source line and a caret under COL.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parser.h"
#include "ir/ir.h"
#include "testutil.h"

#define MAX_FILES 1024
#define MAX_EXPECT 32

/* The sorted list of error files, built in main() before the suite runs. */
static char *files[MAX_FILES];
static int n_files;

/* qsort comparator for C strings. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* List the .graph files of tests/errors/ into `files`. */
static void list_files(void) {
  DIR *dp = opendir(tu_src("tests/errors"));
  if (!dp) return;
  struct dirent *e;
  while ((e = readdir(dp)) && n_files < MAX_FILES) {
    size_t n = strlen(e->d_name);
    if (n > 6 && strcmp(e->d_name + n - 6, ".graph") == 0) files[n_files++] = strdup(e->d_name);
  }
  closedir(dp);
  qsort(files, (size_t)n_files, sizeof *files, cmp_str);
}

typedef struct expect {
  int line, col;
  char sub[512];
} expect;

/* Read the "# expect:" and "# bind:" lines; returns the number of expect lines. */
static int read_header(const char *src, expect *ex, char *bind, size_t bind_cap) {
  int n = 0;
  bind[0] = 0;
  for (const char *p = src; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    int off = 0;
    if (sscanf(line, "# expect: %d:%d: %n", &ex[n].line, &ex[n].col, &off) == 2 && off > 0) {
      ck_assert_int_lt(n, MAX_EXPECT);
      snprintf(ex[n].sub, sizeof ex[n].sub, "%s", line + off);
      size_t k = strlen(ex[n].sub);
      while (k > 0 && (ex[n].sub[k - 1] == '\r' || ex[n].sub[k - 1] == ' ')) ex[n].sub[--k] = 0;
      n++;
    } else if (strncmp(line, "# bind:", 7) == 0) {
      if (snprintf(bind, bind_cap, "%s", line + 7) >= (int)bind_cap) bind[0] = 0;
    }
  }
  return n;
}

/* Set sym_values of g from "B=4,S=8"; returns 0 (and explains) on a bad bind line. */
static int apply_bind(gc_graph *g, const char *bind, const char *file) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", bind);
  for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      fprintf(stderr, "%s: bad bind entry '%s'\n", file, tok);
      return 0;
    }
    *eq = 0;
    int k = -1;
    for (int i = 0; i < g->n_syms; i++)
      if (strcmp(g->sym_names[i], tok) == 0) k = i;
    if (k < 0) {
      fprintf(stderr, "%s: bind: @%s has no symbolic dim '%s'\n", file, g->name, tok);
      return 0;
    }
    g->sym_values[k] = strtoll(eq + 1, NULL, 10);
  }
  return 1;
}

/* Does the rendered text hold an error at path:line:col whose message contains sub,
 * followed by its source line and a caret under col? */
static int find_error(const char *rendered, const char *path, const expect *e) {
  char head[1024], caret[1024];
  snprintf(head, sizeof head, "%s:%d:%d: error: ", path, e->line, e->col);
  int k = snprintf(caret, sizeof caret, "      | ");
  for (int i = 1; i < e->col && k < (int)sizeof caret - 3; i++) caret[k++] = ' ';
  snprintf(caret + k, sizeof caret - (size_t)k, "^\n");
  for (const char *p = strstr(rendered, head); p; p = strstr(p + 1, head)) {
    const char *msg = p + strlen(head), *eol = strchr(msg, '\n');
    if (!eol) continue;
    char m[1024];
    snprintf(m, sizeof m, "%.*s", (int)(eol - msg), msg);
    if (!strstr(m, e->sub)) continue;
    char src_prefix[32];
    snprintf(src_prefix, sizeof src_prefix, "%5d | ", e->line);
    const char *src_line = eol + 1, *src_eol = strchr(src_line, '\n');
    if (strncmp(src_line, src_prefix, strlen(src_prefix)) != 0 || !src_eol) continue;
    if (strncmp(src_eol + 1, caret, strlen(caret)) == 0) return 1;
  }
  return 0;
}

START_TEST(error_file) {
  ck_assert_int_lt(_i, n_files);
  const char *name = files[_i];
  char rel[512];
  snprintf(rel, sizeof rel, "tests/errors/%s", name);
  size_t len;
  char *src = tu_read_file(tu_src(rel), &len);
  ck_assert_msg(src != NULL, "%s: cannot read", rel);
  expect ex[MAX_EXPECT];
  char bind[256];
  int n_expect = read_header(src, ex, bind, sizeof bind);
  ck_assert_msg(n_expect > 0, "%s: no '# expect: LINE:COL: TEXT' lines", rel);

  gc_diags d;
  gc_diags_init(&d, rel, src, len);
  gc_module *m = gc_parse(rel, src, len, &d);
  int bind_ok = 1;
  if (m) gc_verify_module(m, &d);
  if (m && bind[0] && d.n_errors == 0) {
    ck_assert_msg(m->n_graphs > 0, "%s: bind line but no graph", rel);
    gc_graph *g = m->graphs[0];
    bind_ok = apply_bind(g, bind, rel);
    if (bind_ok && gc_graph_specialize(g, &d) == 0) gc_verify_graph(g, &d);
  }
  char *r = gc_diags_render(&d);
  ck_assert_msg(bind_ok, "%s: bad bind line", rel);
  int ok = d.n_errors == n_expect;
  if (!ok)
    fprintf(stderr, "%s: %d errors, expected %d\n", rel, d.n_errors, n_expect);
  for (int i = 0; i < n_expect; i++) {
    if (find_error(r, rel, &ex[i])) continue;
    fprintf(stderr, "%s: missing error %d:%d: ...%s... (with source line and caret)\n", rel,
            ex[i].line, ex[i].col, ex[i].sub);
    ok = 0;
  }
  if (!ok) fprintf(stderr, "%s: diagnostics were:\n%s\n", rel, r);
  ck_assert_msg(ok, "%s: diagnostics do not match its '# expect:' lines", rel);
  free(r);
  gc_diags_free(&d);
  gc_module_free(m);
  free(src);
}
END_TEST

START_TEST(have_error_files) { ck_assert_int_ge(n_files, 25); }
END_TEST

/* One loop-test case per error file, plus a check that there are enough files. */
int main(void) {
  list_files();
  Suite *s = suite_create("errors");
  TCase *tc = tcase_create("files");
  tcase_add_test(tc, have_error_files);
  if (n_files > 0) tcase_add_loop_test(tc, error_file, 0, n_files);
  suite_add_tcase(s, tc);
  int rc = tu_run_suite(s);
  for (int i = 0; i < n_files; i++) free(files[i]);
  return rc;
}
