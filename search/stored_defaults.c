/*
 * search/stored_defaults.c - issue 30: some defining settings' defaults
 * change from one nas version to the next (the validation split, BN
 * recalibration). An experiment whose config leaves such a key unset keeps
 * the value its canonical text stored (see search/stored_defaults.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* access */
#include "nas/store.h"
#include "search/stored_defaults.h"

int nas__stored_defaults(nas_config *cfg, const char *db_path, const char *name, FILE *log)
{
    if (!cfg || !db_path || !name || access(db_path, F_OK) != 0)
        return 0;
    nas_store *st = NULL;
    nas_error err;
    nas_store_experiment e;
    char *canon = NULL, kept[1024];
    int changed = 0;
    if (nas_store_open(db_path, 1, &st, &err) == NAS_OK &&
        nas_store_experiment_find(st, name, &e, &err) == NAS_OK &&
        nas_store_experiment_canonical(st, e.id, &canon, &err) == NAS_OK)
        changed = nas_config_stored_defaults(cfg, canon, kept, sizeof kept);
    /* one line per key: "KEY = VALUE (stored; the default now is D)" */
    for (char *p = changed && log ? kept : NULL, *nl; p && *p; p = nl + 1) {
        if (!(nl = strchr(p, '\n')))
            break;
        *nl = '\0';
        fprintf(log, "nas: %s leaves %.*s unset: experiment '%s' keeps %s\n",
                cfg->path, (int)strcspn(p, " "), p, name, p);
    }
    free(canon);
    nas_store_close(st);
    return changed;
}
