/*
 * space/text.c - the canonical config text's buffer and number formatting
 * (space/text_impl.h), shared by config.c and chain_config.c.
 */
#include <math.h>   /* fabs */
#include <stdarg.h> /* va_list */
#include <stdio.h>  /* snprintf, vsnprintf */
#include <stdlib.h> /* malloc, realloc, strtod */
#include <string.h> /* memcpy, strlen, strpbrk */
#include "text_impl.h"

nas__sbuf nas__sb_new(size_t cap)
{
    nas__sbuf b = {malloc(cap), 0, cap, 0};
    if (b.p)
        b.p[0] = '\0';
    else
        b.oom = 1;
    return b;
}

void nas__sb_printf(nas__sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n + 1;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

void nas__sb_quoted(nas__sbuf *b, const char *s)
{
    nas__sb_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            nas__sb_printf(b, "\\%c", *s);
        else
            nas__sb_printf(b, "%c", *s);
    }
    nas__sb_printf(b, "\"");
}

void nas__fmt_double(double v, char *buf, size_t n)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* Prefer plain decimals ("50.0", not "5e+01") in the usual range. */
    if (strpbrk(buf, "eE") && fabs(v) >= 1e-4 && fabs(v) < 1e15) {
        for (int dec = 0; dec <= 17; dec++) {
            snprintf(buf, n, "%.*f", dec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    }
    if (!strpbrk(buf, ".eEn")) {
        size_t len = strlen(buf);
        if (len + 2 < n)
            memcpy(buf + len, ".0", 3);
    }
}
