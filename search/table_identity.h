/*
 * search/table_identity.h - a table experiment's table, by contents, as
 * part of the experiment's identity (issue 29, defect 9; used by
 * search/controller.c). See search/table_identity.c.
 */
#ifndef NAS_SEARCH_TABLE_IDENTITY_H
#define NAS_SEARCH_TABLE_IDENTITY_H

#include <stddef.h>
#include "nas/space.h"

/*
 * For a table evaluator (evaluator.kind = "table"), append the line
 * "# table: crc32 XXXXXXXX, N bytes\n" (nas_evaluator_table_fingerprint of
 * evaluator.table) to the canonical text *canon (realloc'd). Other
 * evaluators, and a table that cannot be read (the evaluator reports that
 * itself, with its own message), add nothing. Errors: NAS_ENOMEM.
 */
int nas__table_identity(const nas_config *cfg, char **canon, nas_error *err);

/*
 * Compare the "# table:" lines of the stored canonical text and this
 * run's. When both have one and they differ, append
 * "  evaluator.table (contents): OLD -> NOW\n" to out[n] (after what it
 * holds, as nas_config_diff lists a defining setting) and return 1; else
 * return 0. A stored text without the line (an experiment from before
 * issue 29) is unknown, not different: 0.
 */
int nas__table_identity_diff(const char *stored, const char *now, char *out, size_t n);

#endif /* NAS_SEARCH_TABLE_IDENTITY_H */
