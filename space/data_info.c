/*
 * space/data_info.c - the data line of an experiment's canonical text
 * (issue 16): the image shape, class count and normalisation the trainer's
 * data readers found, kept beside the settings so exports and `nas train`
 * preprocess exactly as the search did. The line starts with '#', so the
 * settings diff (nas_config_diff, which looks for "KEY = " at a line's
 * start) and libconfig (a comment) both pass over it.
 */
#include <math.h>   /* isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtof, strtol */
#include <string.h> /* strstr, strncmp */
#include "nas/parse.h" /* nas_parse_list_next */
#include "nas/space.h"

#define LINE_TAG "# data: "

void nas_data_info_fmnist(nas_data_info *info)
{
    memset(info, 0, sizeof *info);
    info->c = 1;
    info->h = 28;
    info->w = 28;
    info->classes = 10;
    info->u8 = 1;
    info->mean[0] = 0.2860f;
    info->std[0] = 0.3530f;
}

/* Shortest text that reads back as exactly `v` with strtof. */
static void fmt_float(float v, char *buf, size_t n)
{
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, n, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v)
            return;
    }
}

static size_t put(char *buf, size_t n, size_t used, const char *s)
{
    if (used < n)
        snprintf(buf + used, n - used, "%s", s);
    return used + strlen(s);
}

void nas_data_info_format(const nas_data_info *info, char *buf, size_t n)
{
    char t[96];
    size_t used = 0;
    int c = info->c > 0 && info->c <= NAS_DATA_MAX_C ? info->c : 0;
    snprintf(t, sizeof t, LINE_TAG "input = [%d, %d, %d]; classes = %d; pixels = \"%s\"; ", info->c,
             info->h, info->w, info->classes, info->u8 ? "uint8" : "float32");
    used = put(buf, n, used, t);
    for (int pass = 0; pass < 2; pass++) {
        used = put(buf, n, used, pass ? "std = [" : "mean = [");
        for (int i = 0; i < c; i++) {
            fmt_float(pass ? info->std[i] : info->mean[i], t, sizeof t);
            used = put(buf, n, used, i ? ", " : "");
            used = put(buf, n, used, t);
        }
        used = put(buf, n, used, pass ? "];\n" : "]; ");
    }
}

/* Parse "[a, b, ...]" of floats at *p; returns the count or -1. */
static int floats(const char **p, float *out, int cap)
{
    const char *q = *p;
    if (*q != '[')
        return -1;
    q++;
    int k = 0;
    while (nas_parse_list_next(&q, ']')) {
        char *end;
        float v = strtof(q, &end);
        if (end == q || k >= cap || !isfinite(v))
            return -1;
        out[k++] = v;
        q = end;
    }
    *p = q + 1;
    return k;
}

int nas_data_info_parse(const char *canon, nas_data_info *info)
{
    if (!canon || !info)
        return 0;
    const char *p = canon;
    while (p && strncmp(p, LINE_TAG, strlen(LINE_TAG)) != 0) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return 0;
    nas_data_info d;
    memset(&d, 0, sizeof d);
    char pix[16] = "";
    int used = 0;
    if (sscanf(p, LINE_TAG "input = [%d, %d, %d]; classes = %d; pixels = \"%15[a-z0-9]\"; mean = %n",
               &d.c, &d.h, &d.w, &d.classes, pix, &used) != 5 || used == 0)
        return 0;
    if (d.c <= 0 || d.c > NAS_DATA_MAX_C || d.h <= 0 || d.w <= 0 || d.classes <= 1)
        return 0;
    d.u8 = strcmp(pix, "uint8") == 0;
    if (!d.u8 && strcmp(pix, "float32") != 0)
        return 0;
    const char *q = p + used;
    if (floats(&q, d.mean, NAS_DATA_MAX_C) != d.c || strncmp(q, "; std = ", 8) != 0)
        return 0;
    q += 8;
    if (floats(&q, d.std, NAS_DATA_MAX_C) != d.c)
        return 0;
    for (int i = 0; i < d.c; i++)
        if (!(d.std[i] > 0))
            return 0;
    *info = d;
    return 1;
}
