/* parser.h - the .graph text frontend's entry point (frontend/parser.c). */
#ifndef GC_PARSER_H
#define GC_PARSER_H

#include <stddef.h>

#include "ir/ir.h"

/* Parse text into a module; NULL on errors (all reported in d). Does not verify. */
gc_module *gc_parse(const char *file, const char *text, size_t len, gc_diags *d);

#endif /* GC_PARSER_H */
