/* lexer.c - turns .graph text into tokens with line:col positions.
 *
 *   INT    = digit { digit }                        (must be < 2^62)
 *   FLOAT  = digits "." digits [ exp ] | digits exp ;  exp = ("e"|"E") ["+"|"-"] digits
 *   STRING = '"' { char | "\" ( '"' | "\" | "n" | "t" ) } '"'   (one line)
 *   VALUE  = "%" ( IDENT | INT )     GNAME = "@" IDENT
 *   IDENT  = ( letter | "_" ) { letter | digit | "_" }
 *   punct  = ( ) [ ] { } < > , ; : = - ->          comment = "#" to end of line
 *
 * Errors are reported here and never produce error tokens (see lexer.h).
 */
#include "frontend/lexer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define INT_LIMIT (INT64_C(1) << 62)

/* Start at line 1, column 1 of text. */
void gc_lex_init(gc_lexer *lx, const char *text, size_t len, gc_diags *d) {
  lx->src = text;
  lx->p = text;
  lx->end = text + len;
  lx->line_start = text;
  lx->line = 1;
  lx->d = d;
  lx->max_errors = 0;
}

/* Location of a pointer on the current line. */
static gc_loc loc_of(const gc_lexer *lx, const char *p) {
  return (gc_loc){lx->line, (int)(p - lx->line_start) + 1};
}

/* Character classes (ASCII only), by table: the lexer classifies every byte. */
enum { C_ALPHA = 1, C_DIGIT = 2, C_SPACE = 4, C_TOKEN = 8 };
static const unsigned char char_class[256] = {
    ['a' ... 'z'] = C_ALPHA, ['A' ... 'Z'] = C_ALPHA, ['_'] = C_ALPHA, ['0' ... '9'] = C_DIGIT,
    [' '] = C_SPACE, ['\t'] = C_SPACE, ['\r'] = C_SPACE, ['\f'] = C_SPACE, ['\v'] = C_SPACE,
    ['\n'] = C_TOKEN, ['#'] = C_TOKEN, ['"'] = C_TOKEN, ['%'] = C_TOKEN, ['@'] = C_TOKEN,
    ['('] = C_TOKEN, [')'] = C_TOKEN, ['['] = C_TOKEN, [']'] = C_TOKEN, ['{'] = C_TOKEN,
    ['}'] = C_TOKEN, ['<'] = C_TOKEN, ['>'] = C_TOKEN, [','] = C_TOKEN, [';'] = C_TOKEN,
    [':'] = C_TOKEN, ['='] = C_TOKEN, ['-'] = C_TOKEN, ['+'] = C_TOKEN, ['*'] = C_TOKEN,
    ['.'] = C_TOKEN};
static int is_alpha(int c) { return char_class[c & 0xff] & C_ALPHA; }
static int is_digit(int c) { return char_class[c & 0xff] & C_DIGIT; }
static int is_alnum(int c) { return char_class[c & 0xff] & (C_ALPHA | C_DIGIT); }

/* Current character, or 0 past the end (the text may hold NUL bytes; callers check p < end). */
static int peek(const gc_lexer *lx, size_t k) {
  return lx->p + k < lx->end ? (unsigned char)lx->p[k] : 0;
}

/* Move past the bytes of the given classes. */
static void skip_class(gc_lexer *lx, int cls) {
  const char *q = lx->p, *e = lx->end;
  while (q < e && (char_class[(unsigned char)*q] & cls)) q++;
  lx->p = q;
}

/* A byte that starts no token and is not space, a newline or a comment. */
static int is_unexpected(int c) { return !char_class[c & 0xff]; }

/* Describe a byte for an error message: 'x' when printable, else \xNN. */
static void char_desc(char *buf, size_t n, int c) {
  if (c >= 0x21 && c < 0x7f)
    snprintf(buf, n, "'%c'", c);
  else
    snprintf(buf, n, "'\\x%02x'", c & 0xff);
}

/* Skip spaces, tabs, carriage returns, newlines and # comments. */
static void skip_space(gc_lexer *lx) {
  const char *q = lx->p, *e = lx->end;
  while (q < e) {
    unsigned char c = (unsigned char)*q;
    if (c == '\n') {
      q++;
      lx->line++;
      lx->line_start = q;
    } else if (char_class[c] & C_SPACE) {
      q++;
    } else if (c == '#') {
      const char *nl = memchr(q, '\n', (size_t)(e - q));
      q = nl ? nl : e;
    } else {
      break;
    }
  }
  lx->p = q;
}

/* Digits of an INT into a value; reports values >= 2^62. */
static int64_t lex_int_value(gc_lexer *lx, const char *s, const char *e, int *bad) {
  int64_t v = 0;
  for (const char *q = s; q < e; q++) {
    if (v > (INT_LIMIT - 1 - (*q - '0')) / 10) {
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, loc_of(lx, s),
                  "integer literal '%.*s' is too large (must be less than 2^62)", (int)(e - s), s);
      *bad = 1;
      return 1;
    }
    v = v * 10 + (*q - '0');
  }
  return v;
}

/* Number: INT or FLOAT. A letter right after the digits is an error (skipped). */
static void lex_number(gc_lexer *lx, gc_token *t) {
  const char *s = lx->p;
  skip_class(lx, C_DIGIT);
  int is_float = 0;
  if (peek(lx, 0) == '.' && peek(lx, 1) != '.') { /* "1..64" is INT DOTDOT INT */
    lx->p++;
    is_float = 1;
    if (!is_digit(peek(lx, 0))) {
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, loc_of(lx, lx->p),
                  "expected a digit after '.' in number '%.*s'", (int)(lx->p - s), s);
      t->bad = 1;
    }
    skip_class(lx, C_DIGIT);
  }
  if (peek(lx, 0) == 'e' || peek(lx, 0) == 'E') {
    size_t k = 1;
    if (peek(lx, 1) == '+' || peek(lx, 1) == '-') k = 2;
    if (is_digit(peek(lx, k))) {
      lx->p += k;
      skip_class(lx, C_DIGIT);
      is_float = 1;
    }
  }
  if (is_alnum(peek(lx, 0)) || (peek(lx, 0) == '.' && peek(lx, 1) != '.')) {
    const char *q = lx->p;
    while (is_alnum(peek(lx, 0)) || peek(lx, 0) == '.') lx->p++;
    if (!t->bad)
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, loc_of(lx, q),
                  "invalid suffix '%.*s' on number '%.*s'", (int)(lx->p - q), q, (int)(q - s), s);
    t->bad = 1;
  }
  t->text = s;
  t->len = (size_t)(lx->p - s);
  if (!is_float) {
    t->kind = GC_TOK_INT;
    const char *e = s;
    while (e < lx->end && is_digit(*e)) e++;
    t->i = lex_int_value(lx, s, e, &t->bad);
    return;
  }
  t->kind = GC_TOK_FLOAT;
  if (t->bad) {
    t->f = 1.0;
    return;
  }
  /* strtod needs a NUL-terminated copy. */
  char small[128];
  char *buf = t->len < sizeof small ? small : malloc(t->len + 1);
  if (!buf) {
    gc_error_at(lx->d, GRAPHC_STATUS_OUT_OF_MEMORY, t->loc, "out of memory");
    t->bad = 1;
    t->f = 1.0;
    return;
  }
  memcpy(buf, s, t->len);
  buf[t->len] = 0;
  errno = 0;
  t->f = strtod(buf, NULL);
  if (isinf(t->f)) {
    gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t->loc,
                "floating-point literal '%s' is out of range", buf);
    t->bad = 1;
    t->f = 1.0;
  }
  if (buf != small) free(buf);
}

/* STRING: checks escapes and termination; the token's text includes the quotes. */
static void lex_string(gc_lexer *lx, gc_token *t) {
  const char *s = lx->p++;
  t->kind = GC_TOK_STRING;
  for (;;) {
    if (lx->p >= lx->end || *lx->p == '\n') {
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t->loc,
                  lx->p >= lx->end ? "unterminated string (end of file before the closing '\"')"
                                   : "unterminated string (newline before the closing '\"')");
      t->bad = 2;
      break;
    }
    unsigned char c = (unsigned char)*lx->p;
    if (c == '"') {
      lx->p++;
      break;
    }
    if (c == '\\') {
      int e = peek(lx, 1);
      if (e == '"' || e == '\\' || e == 'n' || e == 't') {
        lx->p += 2;
        continue;
      }
      if (e == '\n' || lx->p + 1 >= lx->end) {
        lx->p++;
        continue; /* reported as unterminated on the next iteration */
      }
      char esc[8];
      if (e >= 0x21 && e < 0x7f)
        snprintf(esc, sizeof esc, "\\%c", e);
      else
        snprintf(esc, sizeof esc, "\\x%02x", e);
      if (!t->bad) /* one error per string */
        gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, loc_of(lx, lx->p),
                    "unknown escape sequence '%s' in string (use \\\" \\\\ \\n or \\t)", esc);
      if (!t->bad) t->bad = 1;
      lx->p += 2;
      continue;
    }
    if (c < 0x20 && c != '\t' && !t->bad) {
      char desc[16];
      char_desc(desc, sizeof desc, c);
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, loc_of(lx, lx->p),
                  "invalid character %s in string", desc);
      if (!t->bad) t->bad = 1;
    }
    lx->p++;
  }
  t->text = s;
  t->len = (size_t)(lx->p - s);
}

/* Decode escapes up to the closing quote (or the token's end when unterminated). */
size_t gc_lex_string(const gc_token *t, char *out) {
  const char *s = t->text + 1, *e = t->text + t->len; /* after the opening quote */
  size_t n = 0;
  while (s < e && *s != '"') {
    if (*s == '\\' && s + 1 < e) {
      char c = s[1];
      out[n++] = c == 'n' ? '\n' : c == 't' ? '\t' : c;
      s += 2;
    } else {
      out[n++] = *s++;
    }
  }
  out[n] = 0;
  return n;
}

/* VALUE (%name, %123) or GNAME (@name); reports a missing or malformed name. */
static void lex_sigil(gc_lexer *lx, gc_token *t) {
  const char *s = lx->p++;
  int value = *s == '%';
  t->kind = value ? GC_TOK_VALUE : GC_TOK_GNAME;
  if (is_alpha(peek(lx, 0))) {
    skip_class(lx, C_ALPHA | C_DIGIT);
  } else if (is_digit(peek(lx, 0)) && value) {
    skip_class(lx, C_DIGIT);
    if (is_alpha(peek(lx, 0))) {
      skip_class(lx, C_ALPHA | C_DIGIT);
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t->loc,
                  "invalid value name '%.*s' (a name is letters, digits and '_' not starting "
                  "with a digit, or only digits)",
                  (int)(lx->p - s), s);
      t->bad = 1;
    } else if (lx->p - s > 19) {
      gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t->loc,
                  "numeric value name '%.*s' is too large (at most 18 digits)", (int)(lx->p - s),
                  s);
      t->bad = 1;
    }
  } else {
    gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t->loc,
                value ? "expected a value name after '%%' (like %%x or %%0)"
                      : "expected a graph name after '@' (like @main)");
    t->bad = 1;
  }
  t->text = s;
  t->len = (size_t)(lx->p - s);
}

/* Skip space and comments, then lex one token by its first character. */
gc_token gc_lex_next(gc_lexer *lx) {
  for (;;) {
    skip_space(lx);
    gc_token t = {0};
    t.loc = loc_of(lx, lx->p);
    t.text = lx->p;
    if (lx->p >= lx->end || (lx->max_errors && lx->d->n_errors >= lx->max_errors)) {
      t.kind = GC_TOK_EOF; /* the end, or too many errors (a run of junk lines) */
      return t;
    }
    int c = (unsigned char)*lx->p;
    if (is_digit(c)) {
      lex_number(lx, &t);
      return t;
    }
    if (is_alpha(c)) {
      skip_class(lx, C_ALPHA | C_DIGIT);
      t.kind = GC_TOK_IDENT;
      t.len = (size_t)(lx->p - t.text);
      return t;
    }
    if (c == '"') {
      lex_string(lx, &t);
      return t;
    }
    if (c == '%' || c == '@') {
      lex_sigil(lx, &t);
      return t;
    }
    t.len = 1;
    switch (c) {
      case '(': t.kind = GC_TOK_LPAREN; break;
      case ')': t.kind = GC_TOK_RPAREN; break;
      case '[': t.kind = GC_TOK_LBRACKET; break;
      case ']': t.kind = GC_TOK_RBRACKET; break;
      case '{': t.kind = GC_TOK_LBRACE; break;
      case '}': t.kind = GC_TOK_RBRACE; break;
      case '<': t.kind = GC_TOK_LT; break;
      case '>': t.kind = GC_TOK_GT; break;
      case ',': t.kind = GC_TOK_COMMA; break;
      case ';': t.kind = GC_TOK_SEMI; break;
      case ':': t.kind = GC_TOK_COLON; break;
      case '=': t.kind = GC_TOK_EQ; break;
      case '+': t.kind = GC_TOK_PLUS; break;
      case '*': t.kind = GC_TOK_STAR; break;
      case '.':
        if (peek(lx, 1) != '.') goto unexpected;
        t.kind = GC_TOK_DOTDOT;
        t.len = 2;
        break;
      case '-':
        if (peek(lx, 1) == '>') {
          t.kind = GC_TOK_ARROW;
          t.len = 2;
        } else {
          t.kind = GC_TOK_MINUS;
        }
        break;
      default:
      unexpected: {
        /* One error for a run of unexpected characters (binary junk would
         * otherwise give one error per byte); skip them and lex on. */
        const char *q = lx->p + 1;
        while (q < lx->end && is_unexpected((unsigned char)*q)) q++;
        char desc[16];
        char_desc(desc, sizeof desc, c);
        if (q - lx->p > 1)
          gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t.loc,
                      "unexpected character %s (and %d more after it)", desc, (int)(q - lx->p - 1));
        else
          gc_error_at(lx->d, GRAPHC_STATUS_SYNTAX_ERROR, t.loc, "unexpected character %s", desc);
        lx->p = q;
        continue;
      }
    }
    lx->p += t.len;
    return t;
  }
}

/* Names of token kinds, as used in "expected X" messages. */
const char *gc_lex_kind_name(gc_tok_kind k) {
  static const char *const names[GC_TOK_COUNT_] = {
      [GC_TOK_EOF] = "end of file",  [GC_TOK_INT] = "integer",     [GC_TOK_FLOAT] = "float",
      [GC_TOK_STRING] = "string",    [GC_TOK_VALUE] = "value name", [GC_TOK_GNAME] = "graph name",
      [GC_TOK_IDENT] = "identifier", [GC_TOK_LPAREN] = "'('",       [GC_TOK_RPAREN] = "')'",
      [GC_TOK_LBRACKET] = "'['",     [GC_TOK_RBRACKET] = "']'",     [GC_TOK_LBRACE] = "'{'",
      [GC_TOK_RBRACE] = "'}'",       [GC_TOK_LT] = "'<'",           [GC_TOK_GT] = "'>'",
      [GC_TOK_COMMA] = "','",        [GC_TOK_SEMI] = "';'",         [GC_TOK_COLON] = "':'",
      [GC_TOK_EQ] = "'='",           [GC_TOK_MINUS] = "'-'",        [GC_TOK_ARROW] = "'->'",
      [GC_TOK_PLUS] = "'+'",         [GC_TOK_STAR] = "'*'",         [GC_TOK_DOTDOT] = "'..'"};
  return (unsigned)k < GC_TOK_COUNT_ ? names[k] : "?";
}
