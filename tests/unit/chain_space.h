/*
 * tests/unit/chain_space.h - loading a shipped space and parsing its
 * genotypes in the chain-space tests (header only, static; include after
 * <cmocka.h>). A failure fails the test with the loader's or parser's
 * message.
 */
#ifndef NAS_TESTS_CHAIN_SPACE_H
#define NAS_TESTS_CHAIN_SPACE_H

#include <stdio.h>
#include "nas/space.h"

/* The config at `rel` (relative to the source tree) into *cfg and its
 * space (the caller destroys it). */
static nas_space *space_load(const char *rel, nas_config *cfg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", NAS_SOURCE_DIR, rel);
    nas_error err;
    if (nas_config_load(path, cfg, &err) != NAS_OK)
        fail_msg("%s: %s", path, err.msg);
    nas_space *s = NULL;
    assert_int_equal(nas_space_create(&cfg->space, &s, &err), NAS_OK);
    return s;
}

/* Genotype string `str` of space s. */
static nas_genotype space_parse(const nas_space *s, const char *str)
{
    nas_genotype g;
    nas_error err;
    if (nas_space_parse(s, str, &g, &err) != NAS_OK)
        fail_msg("%s: %s", str, err.msg);
    return g;
}

#endif
