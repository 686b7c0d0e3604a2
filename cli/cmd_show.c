/* cli/cmd_show.c - PLACEHOLDER until 'nas show' lands. */
#include <stdio.h>
#include "cli/cli.h"
int nas_cmd_show(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "nas show: not built yet\n");
    return NAS_EXIT_FAIL;
}
