/*
 * space/augment.c - the spelling of an augmentation (issue 16): one parser
 * for data.augment in space.conf and `nas train --augment`, one canonical
 * text for the experiment's settings, checkpoint names and fingerprints.
 * The pixels are changed by nas_augment_image (trainer/augment.c).
 */
#include <stdio.h>  /* snprintf */
#include <string.h> /* memset, strcmp, strncmp */
#include "nas/parse.h"
#include "nas/space.h"

/* "crop" / "cutout" alone, or followed by a number in [1, hi] into *v. */
static int token(const char *t, const char *word, int dflt, long hi, int *v)
{
    size_t n = strlen(word);
    if (strncmp(t, word, n) != 0 || *v)
        return 0;
    if (t[n] == '\0') {
        *v = dflt;
        return 1;
    }
    long x;
    if (t[n] < '0' || t[n] > '9' || nas_parse_long(t + n, 1, hi, &x) != NAS_OK)
        return 0;
    *v = (int)x;
    return 1;
}

int nas_augment_parse(const char *s, nas_augment *a)
{
    memset(a, 0, sizeof *a);
    if (!s || !s[0] || !strcmp(s, "none"))
        return 0;
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), n++) {
        if (!strcmp(t, "flip") && !a->flip)
            a->flip = 1;
        else if (!strncmp(t, "cutout", 6) ? !token(t, "cutout", 16, 1024, &a->cutout)
                                          : !token(t, "crop", 4, 64, &a->crop_pad)) {
            memset(a, 0, sizeof *a);
            return -1;
        }
    }
    /* an empty item (",flip", "crop,,flip") is a typo, not "none" */
    size_t commas = 0;
    for (const char *p = s; *p; p++)
        commas += *p == ',';
    if (n == 0 || commas + 1 != (size_t)n) {
        memset(a, 0, sizeof *a);
        return -1;
    }
    return 0;
}

void nas_augment_format(const nas_augment *a, char *buf, size_t n)
{
    if (!n)
        return;
    buf[0] = '\0';
    if (!a || (a->crop_pad <= 0 && !a->flip && a->cutout <= 0)) {
        snprintf(buf, n, "none");
        return;
    }
    size_t k = 0;
    if (a->crop_pad > 0)
        k += (size_t)snprintf(buf + k, n - k, "crop%d", a->crop_pad);
    if (a->flip && k < n)
        k += (size_t)snprintf(buf + k, n - k, "%sflip", k ? "," : "");
    if (a->cutout > 0 && k < n)
        snprintf(buf + k, n - k, "%scutout%d", k ? "," : "", a->cutout);
}

int nas_augment_check(const nas_augment *a, int h, int w, char *msg, size_t n)
{
    int lo = h < w ? h : w, hi = h > w ? h : w;
    char name[NAS_AUGMENT_STR_MAX];
    if (a && a->crop_pad > 0 && a->crop_pad >= lo) {
        nas_augment only = {.crop_pad = a->crop_pad};
        nas_augment_format(&only, name, sizeof name);
        if (lo > 1)
            snprintf(msg, n, "%s shifts the image by up to %d pixels, but the images are %dx%d "
                     "(H x W): a shift of %d or more moves the window off the image (an all-black "
                     "training image), expected cropN with N at most %d", name, a->crop_pad, h,
                     w, lo, lo - 1);
        else
            snprintf(msg, n, "%s shifts the image by up to %d pixels, but the images are %dx%d "
                     "(H x W): any shift moves a side of one pixel off the image, expected no "
                     "crop", name, a->crop_pad, h, w);
        return NAS_ECONFIG;
    }
    if (a && a->cutout > 0 && a->cutout >= hi) {
        nas_augment only = {.cutout = a->cutout};
        nas_augment_format(&only, name, sizeof name);
        if (hi > 1)
            snprintf(msg, n, "%s cuts out a %dx%d square, but the images are %dx%d (H x W): a "
                     "square of %d or more can cover the whole image (a blank training image), "
                     "expected cutoutN with N at most %d", name, a->cutout, a->cutout, h, w, hi,
                     hi - 1);
        else
            snprintf(msg, n, "%s cuts out a %dx%d square, but the images are %dx%d (H x W): it "
                     "covers the whole image, expected no cutout", name, a->cutout, a->cutout,
                     h, w);
        return NAS_ECONFIG;
    }
    return NAS_OK;
}
