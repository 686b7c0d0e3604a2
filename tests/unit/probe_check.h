/*
 * tests/unit/probe_check.h - nas_data_space_input's probe against the full
 * read (header only, static inline; used by the data readers' tests): the
 * probe must give the shape and classes nas_data_read gives, and fail with
 * the same status and message where the full read fails on the files'
 * structure.
 */
#ifndef NAS_TESTS_PROBE_CHECK_H
#define NAS_TESTS_PROBE_CHECK_H

#include <string.h>
#include "nas/data.h"
#include "nas/space.h"

/* Probe dc into a chain space without space.input / classes. */
static inline int probe_space(const nas_data_conf *dc, nas_space_desc *sd, nas_error *err)
{
    memset(sd, 0, sizeof *sd);
    sd->type = NAS_SPACE_CHAIN;
    nas_error_clear(err);
    return nas_data_space_input(dc, sd, err);
}

/* The probe of dc's training data agrees with the full read's C, H, W and
 * classes (both succeed). */
static inline void probe_agrees(const nas_data_conf *dc)
{
    nas_rawset *r = NULL;
    nas_error err;
    nas_error_clear(&err);
    assert_int_equal(nas_data_read(dc, 0, &r, &err), NAS_OK);
    nas_space_desc sd;
    assert_int_equal(probe_space(dc, &sd, &err), NAS_OK);
    assert_int_equal(sd.data_c, r->c);
    assert_int_equal(sd.data_h, r->h);
    assert_int_equal(sd.data_w, r->w);
    assert_int_equal(sd.data_classes, r->classes);
    nas_rawset_destroy(r);
}

/* Both fail on dc, with the same status and message. */
static inline void probe_fails_alike(const nas_data_conf *dc)
{
    nas_rawset *r = NULL;
    nas_error full, probe;
    nas_error_clear(&full);
    int rc = nas_data_read(dc, 0, &r, &full);
    assert_int_not_equal(rc, NAS_OK);
    assert_null(r);
    nas_space_desc sd;
    assert_int_equal(probe_space(dc, &sd, &probe), rc);
    assert_string_equal(probe.msg, full.msg);
}

#endif
