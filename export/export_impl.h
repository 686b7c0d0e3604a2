/*
 * export/export_impl.h - internal to export/: the steps of
 * nas_export_trial shared between its files.
 */
#ifndef NAS_EXPORT_IMPL_H
#define NAS_EXPORT_IMPL_H

#include <stdio.h> /* FILE */
#include <string.h> /* strcmp */
#include <jansson.h>
#include "nas/export.h"

/* The trial o->trial or the best of o->experiment (o->best, o->by) as an
 * architecture: the trial's row and metrics, its experiment's stored
 * config (space, network, proxy recipe, data), the database's absolute
 * path, the kept weights' path (required when they will be loaded).
 * Fills r's picked/by_* for best. export/export_source.c. */
int nas__export_arch_from_store(const nas_export_opts *o, nas_arch *a, nas_export_result *r,
                                nas_error *err);

/* Issue 32: the weights of `genotype`, a trial of a supernet experiment
 * whose stored config is cfg (a->trial_id, a->experiment set): the slice
 * of the supernet checkpoint beside o->db, BN recalibrated as the trial's
 * evaluation did (nas_evaluator_supernet_subnet_save), written to a
 * temporary .npz named in a->weights; r->supernet names the checkpoint,
 * r->supernet_val_accuracy and _recal_batches say how it measures.
 * Errors: the evaluator's (data, checkpoint, backend), with what the user
 * can do instead. export/export_supernet.c. */
int nas__export_supernet_weights(const nas_export_opts *o, const nas_config *cfg,
                                 const char *genotype, nas_arch *a, nas_export_result *r,
                                 nas_error *err);

/* Remove the temporary weights of nas__export_supernet_weights once
 * loaded (a->weights becomes ""); a no-op for any other trial. */
void nas__export_supernet_cleanup(nas_arch *a, const nas_export_result *r);

/* o->genotype with o->channels, o->cells and o->seed, its MACs and
 * parameters counted; NAS_EINVAL for a genotype that does not parse or
 * has no path from input to output. export/export_source.c. */
int nas__export_arch_from_genotype(const nas_export_opts *o, nas_arch *a, nas_error *err);

/* Parse a->genotype into a->net.genotype in a's space (nas_arch_space;
 * cell or chain). *valid (may be NULL) is then nas_space_is_valid's
 * answer: 1 when a path carries the input to the output. *step (may be
 * NULL) names what failed: 0 creating the space, 1 parsing. *sp (may be
 * NULL) receives the space on success (caller destroys it). Errors: the
 * space's (NAS_EINVAL, NAS_ENOMEM) or the parser's, unprefixed.
 * export/arch_chain.c. */
int nas__arch_parse(nas_arch *a, nas_space **sp, int *valid, int *step, nas_error *err);

/* The experiment's data settings as `a` carries them (every data-defining
 * key of docs/data.md: format, files, layout, split, data.size), for the
 * data readers of nas/data.h; dir is `dir` when given (--data), else
 * a->data.dir. No decode cache. export/export_json.c. */
void nas__arch_data_conf(const nas_arch *a, const char *dir, nas_data_conf *dc);

/* What data of `format` lacks when nas_data_load_test finds no test
 * images, for messages: "no test/ folder in data.dir" (folder), "no test
 * batch in data.dir" (cifar), "no data.test_images" (idx, npy). */
static inline const char *nas__no_test_data(const char *format)
{
    return !strcmp(format, "folder")  ? "no test/ folder in data.dir"
           : !strcmp(format, "cifar") ? "no test batch in data.dir"
                                      : "no data.test_images";
}

/* The data helper of a PyTorch module (issue 28): MEAN, STD and the
 * data's location, preprocess(pixels) and load_data(split, ..., limit)
 * reading the experiment's data as nas does: Fashion-MNIST's idx files
 * for the shorthand (a NULL or a->data.format ""), else a->data.format's
 * files with a->data.norm. Needs IN_CHANNELS defined before it.
 * export/export_data_py.c. */
void nas__export_data_py(FILE *f, const nas_arch *a);

/* ---- chain architectures in the JSON (export/arch_chain.c) ---- */

/* The JSON of chain architecture `a` (issue 15): *space = {"type":
 * "chain", "conf": its space.conf text}, *network = {"decisions": {name:
 * token}, "layers": [...]} (new references). Errors: NAS_EINVAL (a
 * genotype the space does not lower), NAS_ENOMEM. */
int nas__arch_chain_json(const nas_arch *a, json_t **space, json_t **network, nas_error *err);

/* The JSON's "space" object of a chain architecture into a->space (its
 * "conf" through nas_config_parse_string), a->space_type "chain". Errors:
 * NAS_EFORMAT naming `path` and the key, NAS_ENOMEM. */
int nas__arch_chain_read_space(const json_t *space, const char *path, nas_arch *a,
                               nas_error *err);

/* After the genotype parsed in `sp`: input.shape and classes must be the
 * space's where it sets them (space.input, space.classes), and "network.layers", when present, what the genotype lowers
 * to (names, kinds, output shapes). Errors: NAS_EFORMAT naming `path`. */
int nas__arch_chain_check(const json_t *network, const nas_space *sp, const char *path,
                          nas_arch *a, nas_error *err);

#endif
