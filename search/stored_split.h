/*
 * search/stored_split.h - issue 30: an experiment resumes with the
 * validation split it was created with when its config leaves data.valid
 * unset (search/stored_split.c). Private to search/.
 */
#ifndef NAS_SEARCH_STORED_SPLIT_H
#define NAS_SEARCH_STORED_SPLIT_H

#include <stdio.h>
#include "nas/space.h"

/*
 * When cfg leaves data.valid unset and database `db_path` (opened
 * read-only; nothing when it does not exist or cannot be read: the run's
 * own open reports that) holds experiment `name` created with another
 * data.valid, set cfg's to the stored one (nas_config_stored_split) and
 * say so on `log` (may be NULL). Returns 1 when cfg changed, else 0.
 */
int nas__stored_split(nas_config *cfg, const char *db_path, const char *name, FILE *log);

#endif
