/*
 * export/export_impl.h - internal to export/: the steps of
 * nas_export_trial shared between its files.
 */
#ifndef NAS_EXPORT_IMPL_H
#define NAS_EXPORT_IMPL_H

#include "nas/export.h"

/* The trial o->trial or the best of o->experiment (o->best, o->by) as an
 * architecture: the trial's row and metrics, its experiment's stored
 * config (space, network, proxy recipe, data), the database's absolute
 * path, the kept weights' path (required when they will be loaded).
 * Fills r's picked/by_* for best. export/export_source.c. */
int nas__export_arch_from_store(const nas_export_opts *o, nas_arch *a, nas_export_result *r,
                                nas_error *err);

/* o->genotype with o->channels, o->cells and o->seed, its MACs and
 * parameters counted; NAS_EINVAL for a genotype that does not parse or
 * has no path from input to output. export/export_source.c. */
int nas__export_arch_from_genotype(const nas_export_opts *o, nas_arch *a, nas_error *err);

/* Parse a->genotype into a->net.genotype in a's cell space; `check` 1
 * also requires a path from the cell's input to its output (NAS_EINVAL).
 * export/export_source.c. */
int nas__export_arch_tokens(nas_arch *a, int check, nas_error *err);

#endif
