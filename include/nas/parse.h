/*
 * nas/parse.h - checked conversions of text to numbers (base/parse.c), for
 * command-line options and any other user text: strtol / strtoull / strtod
 * with the end pointer and errno checked, so a typo is an error, never 0
 * (the darknet trap in STYLE.md: atoi turning typos into 0).
 */
#ifndef NAS_PARSE_H
#define NAS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A whole decimal integer in [lo, hi] into *out. Returns 0, or -1 (and
 * leaves *out alone) for junk, trailing text, overflow or a value out of
 * range. */
int nas_parse_long(const char *s, long lo, long hi, long *out);

/* A whole non-negative decimal integer (no sign) into *out. Returns 0, or
 * -1 (and leaves *out alone) for junk, trailing text or overflow. */
int nas_parse_u64(const char *s, uint64_t *out);

/* A finite number in (lo, hi] into *out, or [lo, hi] when lo_ok. Returns 0,
 * or -1 (and leaves *out alone) for junk, trailing text, overflow or a
 * value out of range. */
int nas_parse_double(const char *s, double lo, int lo_ok, double hi, double *out);

/* Issue 33: a duration into *seconds: a non-negative number of seconds,
 * optionally followed by one unit, s (seconds), m (minutes), h (hours) or
 * d (days): "90", "90s", "1.5m", "30m", "2h". Returns 0, or -1 (and leaves
 * *seconds alone) for junk, a negative or non-finite value, another unit,
 * or text after the unit. */
int nas_parse_duration(const char *s, double *seconds);

/* Step through a list of items separated by commas and spaces, such as
 * "[1.5, 2]" or NumPy's shape "(3, 28, 28,)": skips the separators at *p,
 * then returns 0 with *p on `close` (the list's end), else 1 with *p on
 * the next item, which the caller converts and steps past. At the text's
 * end it returns 1 too, so the caller's conversion fails there. */
int nas_parse_list_next(const char **p, char close);

/* The other way (issue 29): `s` as one word for a POSIX shell, so that a
 * hint such as `nas query --db PATH` can be pasted. s as it is when it is
 * not empty and every character is one of A-Z a-z 0-9 _ @ % + = : , . / -;
 * otherwise in single quotes, each ' written as '\'' (POSIX.1-2017, Shell
 * Command Language 2.2.3). Into out[n], which n >= 4 * strlen(s) + 3 always
 * holds (NAS_SHELL_QUOTE_MAX(len)); a smaller out gets a truncated but
 * still closed quote. Returns out. */
#define NAS_SHELL_QUOTE_MAX(len) (4 * (len) + 3)
const char *nas_shell_quote(const char *s, char *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* NAS_PARSE_H */
