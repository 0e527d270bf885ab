/* lexer.h - tokens of the .graph language (prefix gc_lex_).
 *
 * The lexer is pull-based: gc_lex_next() returns one token at a time, with its
 * line:col. It never returns an error token: a lexical error is reported into
 * the diagnostics and the lexer hands back its best guess (a bad character is
 * skipped; a bad string or number still yields a STRING/INT/FLOAT token whose
 * `bad` flag is set), so the parser keeps going without cascading errors.
 */
#ifndef GC_LEXER_H
#define GC_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

typedef enum gc_tok_kind {
  GC_TOK_EOF,
  GC_TOK_INT,      /* 123 (value in .i, always < 2^62) */
  GC_TOK_FLOAT,    /* 1.5  2e-3  1.0e+10 (value in .f) */
  GC_TOK_STRING,   /* "..." with \" \\ \n \t (decode with gc_lex_string) */
  GC_TOK_VALUE,    /* %name or %123 */
  GC_TOK_GNAME,    /* @name */
  GC_TOK_IDENT,    /* name: keywords, dtypes, op names, symbolic dims */
  GC_TOK_LPAREN,   /* ( */
  GC_TOK_RPAREN,   /* ) */
  GC_TOK_LBRACKET, /* [ */
  GC_TOK_RBRACKET, /* ] */
  GC_TOK_LBRACE,   /* { */
  GC_TOK_RBRACE,   /* } */
  GC_TOK_LT,       /* < */
  GC_TOK_GT,       /* > */
  GC_TOK_COMMA,    /* , */
  GC_TOK_SEMI,     /* ; */
  GC_TOK_COLON,    /* : */
  GC_TOK_EQ,       /* = */
  GC_TOK_MINUS,    /* - */
  GC_TOK_ARROW,    /* -> */
  GC_TOK_PLUS,     /* + (symbol expressions) */
  GC_TOK_STAR,     /* * (symbol expressions) */
  GC_TOK_DOTDOT,   /* .. (symbol ranges) */
  GC_TOK_COUNT_
} gc_tok_kind;

typedef struct gc_token {
  gc_tok_kind kind;
  const char *text;  /* spelling in the source (not NUL-terminated) */
  size_t len;
  gc_loc loc;        /* of the first character */
  int64_t i;         /* INT */
  double f;          /* FLOAT */
  int bad;           /* a lexical error was already reported for this token; 2: an
                        unterminated string that swallowed the rest of its line */
} gc_token;

typedef struct gc_lexer {
  const char *src, *p, *end;
  const char *line_start;
  int line;
  gc_diags *d;
  int max_errors;        /* when d->n_errors reaches it, only EOF follows (0: no limit) */
} gc_lexer;

/* Start lexing text[0..len); errors go to d. */
void gc_lex_init(gc_lexer *lx, const char *text, size_t len, gc_diags *d);
/* The next token; GC_TOK_EOF at the end (and again on every later call). */
gc_token gc_lex_next(gc_lexer *lx);
/* Decode a STRING token's contents into out (room for t->len bytes is enough);
 * returns the decoded length and NUL-terminates. */
size_t gc_lex_string(const gc_token *t, char *out);
/* Human name of a token kind for messages: "';'", "identifier", "end of file". */
const char *gc_lex_kind_name(gc_tok_kind k);

#endif /* GC_LEXER_H */
