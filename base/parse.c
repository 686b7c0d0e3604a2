/* base/parse.c - checked text-to-number conversions (nas/parse.h). */
#include <errno.h>
#include <stdlib.h> /* strtol, strtoull, strtod */
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

int nas_parse_list_next(const char **p, char close)
{
    while (**p == ' ' || **p == ',')
        (*p)++;
    return **p != close;
}
