/* cli/cmd_train.c - PLACEHOLDER until 'nas train' lands. */
#include <stdio.h>
#include "cli/cli.h"
int nas_cmd_train(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "nas train: not built yet\n");
    return NAS_EXIT_FAIL;
}
