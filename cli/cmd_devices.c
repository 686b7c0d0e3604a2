/*
 * cli/cmd_devices.c - `nas devices`: the backends compiled in and the
 * devices found (nas_report_devices, report/devices.c). Exit code 0
 * whenever the listing could be made (an absent GPU is not a failure of
 * this command).
 */
#include <stdio.h>
#include "cli/cli.h"
#include "nas/report.h"

int nas_cmd_devices(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "nas devices: unexpected argument '%s'\n", argv[1]);
        nas_cli_usage(stderr, "devices");
        return NAS_EXIT_USAGE;
    }
    nas_error err;
    nas_error_clear(&err);
    if (nas_report_devices(stdout, &err) != NAS_OK) {
        fprintf(stderr, "nas devices: %s\n", err.msg);
        return NAS_EXIT_FAIL;
    }
    return NAS_EXIT_OK;
}
