/*
 * space/chain_config.h - the chain keys of space.conf, between
 * space/config.c and space/chain_config.c (internal to space/).
 */
#ifndef NAS_SPACE_CHAIN_CONFIG_H
#define NAS_SPACE_CHAIN_CONFIG_H

#include <stddef.h>
#include <libconfig.h>
#include "nas/space.h"

/* 1 when setting `name` (`s`) of the space group is read here: stem, head,
 * se_gate, input, classes, and stages when it is a list. */
int nas__chain_claims(const char *name, const config_setting_t *s);

/* Pass 1: read setting `s` into d. Errors: NAS_ECONFIG with the message in
 * msg ("what, expected what") and the offending setting in *bad. */
int nas__chain_read(const config_setting_t *s, nas_space_desc *d, const config_setting_t **bad,
                    char *msg, size_t n);

/* Pass 2: the checks that need the whole space (feature map never below
 * 1x1, depth within layers, zero only where shapes match, limits of the
 * compiled space). `space_line` is the space group's line. Errors:
 * NAS_ECONFIG with the message in msg and its line in *line. */
int nas__chain_validate(const nas_space_desc *d, int space_line, int *line, char *msg, size_t n);

/* Canonical text of space key `key` (its group is "space"): NULL = print
 * the key as usual; otherwise *replace = 1 and the returned malloc'd text
 * (possibly "", several lines without the final newline) stands instead. */
char *nas__space_canonical_field(const nas_space_desc *d, const char *key, int *replace);

#endif
