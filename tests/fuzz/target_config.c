/*
 * tests/fuzz/target_config.c - space.conf text through
 * nas_config_parse_string (space/config.c, libconfig). Promises checked:
 * a failure has an error code and a "NAME:LINE: ..." message; a success
 * has a canonical text that nas_config_diff finds identical to itself.
 * The name has no directory, so @include is relative to the working
 * directory (scripts/fuzz.sh runs in an empty one).
 */
#include <stdlib.h>
#include <string.h>
#include "nas/space.h"
#include "fuzz.h"

int nas_fuzz_config(const uint8_t *data, size_t size)
{
    char *text = nas_fuzz_cstr(data, size);
    nas_config *cfg = malloc(sizeof *cfg);
    NAS_FUZZ_CHECK(cfg != NULL, "malloc");
    nas_error err;
    nas_error_clear(&err);
    int rc = nas_config_parse_string(text, "fuzz.conf", cfg, &err);
    if (rc != NAS_OK) {
        NAS_FUZZ_CHECK(rc < 0 && err.code == rc && err.msg[0], "rc %d code %d msg '%s'", rc,
                       err.code, err.msg);
    } else {
        char *canon = nas_config_canonical(cfg);
        NAS_FUZZ_CHECK(canon != NULL, "canonical text");
        char diff[2048];
        int nd = nas_config_diff(canon, cfg, 1, diff, sizeof diff);
        int nr = nas_config_diff(canon, cfg, 0, diff, sizeof diff);
        NAS_FUZZ_CHECK(nd == 0 && nr == 0, "config differs from its own canonical text: %s",
                       diff);
        free(canon);
    }
    free(cfg);
    free(text);
    return rc;
}
