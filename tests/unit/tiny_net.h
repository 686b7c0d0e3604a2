/*
 * tests/unit/tiny_net.h - the small network the unit tests build (header
 * only, static inline): the NAS-Bench-201 cell network (Dong & Yang, ICLR
 * 2020) on 1x8x8 inputs with 5 classes and 4 channels in the first stage,
 * so that a forward/backward pass on the "ref" backend takes milliseconds.
 */
#ifndef NAS_TESTS_TINY_NET_H
#define NAS_TESTS_TINY_NET_H

#include <stdint.h>
#include <string.h>
#include "nas/trainer.h"

/* Description of the tiny net with cell ops `ops` (6 NAS_OP_* values, one
 * per edge in genotype order) and `cells_per_stage` cells in each of its 3
 * stages (4, 8, 16 channels). Input x[N,1,8,8], output logits [N,5]. */
static inline nas_net_desc tiny_net_desc(const int ops[6], int cells_per_stage)
{
    nas_net_desc d;
    memset(&d, 0, sizeof d);
    d.genotype.len = 6;
    for (int i = 0; i < 6; i++)
        d.genotype.tok[i] = (uint8_t)ops[i];
    d.channels = 4;
    d.stages = 3;
    d.cells_per_stage = cells_per_stage;
    d.in_c = 1;
    d.in_h = 8;
    d.in_w = 8;
    d.classes = 5;
    return d;
}

#endif
