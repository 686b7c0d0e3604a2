/*
 * nas/suggest.h - "did you mean" (base/suggest.c): the closest valid word
 * to a mistyped one, by edit distance, for config keys, choice values, ops,
 * commands and options. Messages append it after their list of valid words:
 * "unknown key 'trails' in group 'search', expected one of: ... (did you
 * mean 'trials'?)".
 */
#ifndef NAS_SUGGEST_H
#define NAS_SUGGEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The optimal-string-alignment distance between a and b (Damerau's
 * restricted edit distance: insertions, deletions, substitutions and
 * transpositions of two adjacent characters each cost 1; Boytsov 2011,
 * "Indexing methods for approximate dictionary searching", section 2),
 * comparing ASCII letters without case. Words longer than 63 bytes are
 * compared on their first 63. O(|a| |b|) time, no allocation. */
int nas_edit_distance(const char *a, const char *b);

/* The most edits a word of `len` characters may be away from a suggestion:
 * max(1, (len + 1) / 3), so "trails" (6) allows 2 and "lr" allows 1.
 * Leading '-' of options are not counted in `len`. */
int nas_suggest_threshold(size_t len);

/* The closest word to `word` in `list`, a text of words separated by
 * commas, spaces and quotes ("a, b" or "\"a\", \"b\"", as error messages
 * list them), within nas_suggest_threshold of `word`'s length; ties go to
 * the first. Copies it into out[size] and returns 1; returns 0 with out
 * set to "" when no word is close enough or `word` is in `list` itself.
 * Never fails: a NULL or empty list gives 0. */
int nas_suggest(const char *word, const char *list, char *out, size_t size);

/* The hint that messages append: " (did you mean 'WORD'?)" with
 * nas_suggest's word into buf[size], or "" when it has none. Returns buf,
 * so that it can stand as a printf argument. */
const char *nas_suggest_hint(const char *word, const char *list, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NAS_SUGGEST_H */
