/*
 * tests/unit/scratch_dir.h - a scratch directory for a cmocka test group
 * (header only): scratch_dir_setup makes /tmp/nas_test_<name>_XXXXXX as
 * the group setup, scratch_dir_teardown removes it with everything in it.
 * The test file defines SCRATCH_NAME before including this header; the
 * path is g_dir.
 */
#ifndef NAS_TESTS_SCRATCH_DIR_H
#define NAS_TESTS_SCRATCH_DIR_H

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* mkdtemp, system */

static char g_dir[256];

static int scratch_dir_setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/nas_test_%s_XXXXXX", SCRATCH_NAME);
    return mkdtemp(g_dir) ? 0 : -1;
}

static int scratch_dir_teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
