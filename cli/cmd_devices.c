/*
 * cli/cmd_devices.c - `nas devices`: the backends compiled in and the
 * devices found (nas_report_devices, report/devices.c). Exit code 0
 * whenever the listing could be made (an absent GPU is not a failure of
 * this command).
 */
#include <stdio.h>
#include "cli/cli.h"

int nas_cmd_devices(int argc, char **argv)
{
    if (argc > 1)
        return nas_cli_usage_error("devices", "unexpected argument '%s'", argv[1]);
    nas_error err;
    nas_error_clear(&err);
    if (nas_report_devices(stdout, &err) != NAS_OK) {
        fprintf(stderr, "nas devices: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    return NAS_EXIT_OK;
}
