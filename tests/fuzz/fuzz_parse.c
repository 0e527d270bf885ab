/* fuzz_parse.c - libFuzzer target for the .graph frontend, verifier and printer.
 *
 * Input: arbitrary bytes, handed to gc_parse as text of exactly that length
 * (not NUL-terminated, so an over-read is an ASan report). Diagnostics are
 * rendered (source line + caret) to exercise that code too.
 *
 * Property: whatever parses and verifies prints; the printed text parses and
 * verifies again, and prints to the identical text. Any difference aborts
 * with both texts on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parser.h"
#include "ir/ir.h"

/* Print the text and abort: the round-trip property does not hold. */
static void fail(const char *why, const char *a, const char *b, const gc_diags *d) {
  fprintf(stderr, "fuzz_parse: %s\n--- first print ---\n%s\n", why, a ? a : "(null)");
  if (b) fprintf(stderr, "--- second print ---\n%s\n", b);
  if (d && d->n) {
    char *r = gc_diags_render(d);
    fprintf(stderr, "--- diagnostics ---\n%s\n", r ? r : "");
    free(r);
  }
  abort();
}

/* Parse + verify text; NULL when either reports an error (diagnostics in d). */
static gc_module *parse_verify(const char *text, size_t len, gc_diags *d) {
  gc_module *m = gc_parse("fuzz.graph", text, len, d);
  if (m && (gc_verify_module(m, d) > 0 || d->n_errors)) {
    gc_module_free(m);
    m = NULL;
  }
  return m;
}

/* Module as canonical text (malloc'd); aborts when the printer runs out of memory. */
static char *print_module(const gc_module *m) {
  gc_sbuf b = {0};
  gc_print_module(&b, m);
  if (b.failed) fail("printer failed (out of memory)", NULL, NULL, NULL);
  char *s = gc_sbuf_take(&b);
  if (!s) s = strdup("");
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: the parse + verify + print round trip on one input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  gc_diags d;
  gc_diags_init(&d, "fuzz.graph", text, size);
  gc_module *m = parse_verify(text, size, &d);
  char *rendered = gc_diags_render(&d);
  free(rendered);
  if (m && d.n_errors) fail("a module came back together with errors", NULL, NULL, &d);
  gc_diags_free(&d);
  if (!m) return 0;

  char *first = print_module(m);
  gc_module_free(m);

  gc_diags d2;
  gc_diags_init(&d2, "printed.graph", first, strlen(first));
  gc_module *m2 = parse_verify(first, strlen(first), &d2);
  if (!m2) fail("the printed text does not parse and verify", first, NULL, &d2);
  gc_diags_free(&d2);
  char *second = print_module(m2);
  gc_module_free(m2);
  if (strcmp(first, second) != 0) fail("printing is not a fixed point", first, second, NULL);
  free(first);
  free(second);
  return 0;
}
