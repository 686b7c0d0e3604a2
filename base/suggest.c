/* base/suggest.c - edit distance and "did you mean" (nas/suggest.h). */
#include <ctype.h>
#include <stdio.h> /* snprintf */
#include <string.h>
#include "nas/suggest.h"

#define WORD_MAX 63

int nas_edit_distance(const char *a, const char *b)
{
    /* Three rows of the dynamic-programming table (Wagner-Fischer), the
     * one two back for transpositions (optimal string alignment). */
    int d[3][WORD_MAX + 1];
    size_t n = strlen(a), m = strlen(b);
    n = n > WORD_MAX ? WORD_MAX : n;
    m = m > WORD_MAX ? WORD_MAX : m;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
        cur[0] = (int)i;
        int ca = tolower((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= m; j++) {
            int cb = tolower((unsigned char)b[j - 1]);
            int v = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < v)
                v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;
            cur[j] = v;
        }
    }
    return d[n % 3][m];
}

int nas_suggest_threshold(size_t len)
{
    int t = (int)((len + 1) / 3);
    return t < 1 ? 1 : t;
}

static int is_sep(char ch)
{
    return ch == ',' || ch == ' ' || ch == '"' || ch == '\'' || ch == '\n' || ch == '\t';
}

int nas_suggest(const char *word, const char *list, char *out, size_t size)
{
    if (size)
        out[0] = '\0';
    if (!word || !list || !size)
        return 0;
    size_t skip = strspn(word, "-");
    int best = nas_suggest_threshold(strlen(word + skip)) + 1;
    const char *p = list;
    while (*p) {
        while (*p && is_sep(*p))
            p++;
        size_t len = 0;
        while (p[len] && !is_sep(p[len]))
            len++;
        if (len == 0)
            break;
        char cand[WORD_MAX + 1];
        size_t cl = len > WORD_MAX ? WORD_MAX : len;
        memcpy(cand, p, cl);
        cand[cl] = '\0';
        p += len;
        if (strcmp(cand, word) == 0) { /* the word is valid: nothing to suggest */
            out[0] = '\0';
            return 0;
        }
        int dist = nas_edit_distance(word, cand);
        if (dist < best && dist < (int)cl) {
            best = dist;
            size_t k = cl < size - 1 ? cl : size - 1;
            memcpy(out, cand, k);
            out[k] = '\0';
        }
    }
    return out[0] != '\0';
}

const char *nas_suggest_hint(const char *word, const char *list, char *buf, size_t size)
{
    char best[WORD_MAX + 1];
    if (size == 0)
        return "";
    buf[0] = '\0';
    if (nas_suggest(word, list, best, sizeof best))
        snprintf(buf, size, " (did you mean '%s'?)", best);
    return buf;
}
