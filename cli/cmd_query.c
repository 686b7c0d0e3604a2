/* cli/cmd_query.c - PLACEHOLDER until 'nas query' lands. */
#include <stdio.h>
#include "cli/cli.h"
int nas_cmd_query(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "nas query: not built yet\n");
    return NAS_EXIT_FAIL;
}
