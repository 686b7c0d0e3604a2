/* base/parse.c - checked text-to-number conversions (nas/parse.h), and
 * shell quoting for the hints nas prints. */
#include <errno.h>
#include <math.h>   /* isfinite */
#include <stdlib.h> /* strtol, strtoull, strtod */
#include <string.h> /* strchr */
#include "nas/parse.h"

int nas_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int nas_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int nas_parse_double(const char *s, double lo, int lo_ok, double hi, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !(lo_ok ? d >= lo : d > lo) || !(d <= hi))
        return -1;
    *out = d;
    return 0;
}

int nas_parse_duration(const char *s, double *seconds)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || !isfinite(d) || d < 0 || *s == ' ' || *s == '\t')
        return -1;
    double unit = 1;
    if (*end) {
        static const char units[] = "smhd";
        static const double mult[] = {1, 60, 3600, 86400};
        const char *u = strchr(units, *end);
        if (!u || end[1] != '\0')
            return -1;
        unit = mult[u - units];
    }
    if (!isfinite(d * unit))
        return -1;
    *seconds = d * unit;
    return 0;
}

int nas_parse_list_next(const char **p, char close)
{
    while (**p == ' ' || **p == ',')
        (*p)++;
    return **p != close;
}

const char *nas_shell_quote(const char *s, char *out, size_t n)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789_@%+=:,./-";
    if (!out || n == 0)
        return out;
    if (!s)
        s = "";
    int plain = *s != '\0';
    for (const char *c = s; *c && plain; c++)
        plain = strchr(safe, *c) != NULL;
    size_t used = 0;
    if (plain) {
        for (; *s && used + 1 < n; s++)
            out[used++] = *s;
        out[used] = '\0';
        return out;
    }
    if (n < 3) { /* no room for a quoted word */
        out[0] = '\0';
        return out;
    }
    out[used++] = '\'';
    for (; *s; s++) {
        const char *piece = *s == '\'' ? "'\\''" : NULL;
        size_t k = piece ? 4 : 1;
        if (used + k + 2 > n) /* keep room for the closing quote and NUL */
            break;
        if (piece) {
            for (size_t i = 0; i < k; i++)
                out[used++] = piece[i];
        } else {
            out[used++] = *s;
        }
    }
    out[used++] = '\'';
    out[used] = '\0';
    return out;
}
