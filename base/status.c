/* base/status.c - status strings and error details (see nas/status.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "nas/status.h"

const char *nas_strerror(int code)
{
    switch (code) {
#define NAS__STATUS_DESC(name, value, desc) case value: return desc;
        NAS_STATUS_MAP(NAS__STATUS_DESC)
#undef NAS__STATUS_DESC
    }
    return "unknown status";
}

const char *nas_err_name(int code)
{
    switch (code) {
#define NAS__STATUS_NAME(name, value, desc) case value: return "NAS_" #name;
        NAS_STATUS_MAP(NAS__STATUS_NAME)
#undef NAS__STATUS_NAME
    }
    return "NAS_UNKNOWN";
}

int nas_error_set(nas_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void nas_error_prefix(nas_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
}

void nas_error_clear(nas_error *err)
{
    if (err) {
        err->code = NAS_OK;
        err->msg[0] = '\0';
    }
}
