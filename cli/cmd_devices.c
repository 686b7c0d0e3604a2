/* cli/cmd_devices.c - PLACEHOLDER until 'nas devices' lands. */
#include <stdio.h>
#include "cli/cli.h"
int nas_cmd_devices(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "nas devices: not built yet\n");
    return NAS_EXIT_FAIL;
}
