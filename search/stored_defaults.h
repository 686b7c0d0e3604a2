/*
 * search/stored_defaults.h - issue 30: an experiment resumes with the
 * defining settings it was created with when its config leaves a key whose
 * default changed unset (data.valid, proxy.bn_recalibrate:
 * nas_config_stored_defaults; search/stored_defaults.c). Private to search/.
 */
#ifndef NAS_SEARCH_STORED_DEFAULTS_H
#define NAS_SEARCH_STORED_DEFAULTS_H

#include <stdio.h>
#include "nas/space.h"

/*
 * When database `db_path` (opened read-only; nothing when it does not
 * exist or cannot be read: the run's own open reports that) holds
 * experiment `name`, give cfg the stored values of the changed defaults
 * it leaves unset (nas_config_stored_defaults) and say so on `log` (may
 * be NULL), one line per key. Returns how many keys changed.
 */
int nas__stored_defaults(nas_config *cfg, const char *db_path, const char *name, FILE *log);

#endif
