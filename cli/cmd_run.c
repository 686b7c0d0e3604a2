/* cli/cmd_run.c - PLACEHOLDER until 'nas run' lands. */
#include <stdio.h>
#include "cli/cli.h"
int nas_cmd_run(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "nas run: not built yet\n");
    return NAS_EXIT_FAIL;
}
