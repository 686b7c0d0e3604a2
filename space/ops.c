/*
 * space/ops.c - the cell-space op registry, generated from nas/ops.def.
 *
 * Op names are the ones NAS-Bench-201 uses in its genotype strings
 * (Dong & Yang, ICLR 2020). The token id of an op is its position in
 * ops.def.
 */
#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp */
#include "nas/space.h"
#include "space_impl.h"

static const char *const op_names[NAS_OP_COUNT] = {
#define NAS_OP(enum_name, str) [NAS_OP_##enum_name] = str,
#include "nas/ops.def"
#undef NAS_OP
};

/* Name of op `op` ("nor_conv_3x3"), or NULL when op is not in [0, NAS_OP_COUNT). */
const char *nas_op_name(int op)
{
    if (op < 0 || op >= NAS_OP_COUNT)
        return NULL;
    return op_names[op];
}

/* Look `name` up in the registry. Returns NAS_OK and sets *op, or
 * NAS_ENOTFOUND (and leaves *op untouched) for an unknown or NULL name. */
int nas_op_from_name(const char *name, int *op)
{
    if (!name)
        return NAS_ENOTFOUND;
    for (int i = 0; i < NAS_OP_COUNT; i++) {
        if (strcmp(op_names[i], name) == 0) {
            if (op)
                *op = i;
            return NAS_OK;
        }
    }
    return NAS_ENOTFOUND;
}

/* Comma-separated names of the ops in `mask` (every op when mask == 0), for
 * error messages ("expected one of: none, skip_connect, ..."). */
const char *nas__op_list(unsigned mask, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0)
        return buf;
    buf[0] = '\0';
    for (int i = 0; i < NAS_OP_COUNT; i++) {
        if (mask && !(mask & (1u << i)))
            continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", op_names[i]);
        if (w < 0 || (size_t)w >= n - used)
            break;
        used += (size_t)w;
    }
    return buf;
}
