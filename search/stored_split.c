/*
 * search/stored_split.c - issue 30: the default validation split may grow
 * from one nas version to the next, and the split is a defining setting.
 * An experiment whose config leaves data.valid unset keeps the split its
 * canonical text stored (see search/stored_split.h).
 */
#include <stdlib.h>
#include <unistd.h> /* access */
#include "nas/store.h"
#include "search/stored_split.h"

int nas__stored_split(nas_config *cfg, const char *db_path, const char *name, FILE *log)
{
    if (!cfg || cfg->data.valid_set || !db_path || !name || access(db_path, F_OK) != 0)
        return 0;
    nas_store *st = NULL;
    nas_error err;
    nas_store_experiment e;
    char *canon = NULL;
    int changed = 0;
    if (nas_store_open(db_path, 1, &st, &err) == NAS_OK &&
        nas_store_experiment_find(st, name, &e, &err) == NAS_OK &&
        nas_store_experiment_canonical(st, e.id, &canon, &err) == NAS_OK) {
        int was = cfg->data.valid;
        double was_f = cfg->data.valid_fraction;
        changed = nas_config_stored_split(cfg, canon);
        if (changed && log) {
            char now[32];
            if (was_f > 0)
                snprintf(now, sizeof now, "%g of the training images", was_f);
            else
                snprintf(now, sizeof now, "%d images", was);
            if (cfg->data.valid_fraction > 0)
                fprintf(log, "nas: %s leaves data.valid unset: experiment '%s' keeps its stored "
                        "split, %g of the training images (the default now is %s)\n", cfg->path,
                        name, cfg->data.valid_fraction, now);
            else
                fprintf(log, "nas: %s leaves data.valid unset: experiment '%s' keeps its stored "
                        "split, %d validation images (the default now is %s)\n", cfg->path, name,
                        cfg->data.valid, now);
        }
    }
    free(canon);
    nas_store_close(st);
    return changed;
}
