/*
 * space/text_impl.h - the growing text buffer and number formatting of the
 * canonical config text (internal; space/text.c). config.c writes the
 * settings with it, chain_config.c the chain space's keys, so both halves
 * of the stored canonical text are formatted by the same code.
 */
#ifndef NAS_SPACE_TEXT_IMPL_H
#define NAS_SPACE_TEXT_IMPL_H

#include <stddef.h>

/* Text in p[0..len) (NUL-terminated), cap bytes allocated (malloc; the
 * user frees p). oom: an allocation or formatting failed, the text is
 * incomplete and later appends do nothing. */
typedef struct nas__sbuf {
    char *p;
    size_t len, cap;
    int oom;
} nas__sbuf;

/* A buffer of `cap` bytes holding "" (oom set when malloc fails). */
nas__sbuf nas__sb_new(size_t cap);

/* Append printf-formatted text, growing the buffer as needed. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void nas__sb_printf(nas__sbuf *b, const char *fmt, ...);

/* Append s as a libconfig string literal: in double quotes, '"' and '\'
 * escaped. */
void nas__sb_quoted(nas__sbuf *b, const char *s);

/* The shortest decimal text that reads back (strtod) as exactly `v`, into
 * buf[n], always with a '.' or an exponent so libconfig reads a float;
 * plain decimals ("50.0", not "5e+01") for 1e-4 <= |v| < 1e15. */
void nas__fmt_double(double v, char *buf, size_t n);

#endif
