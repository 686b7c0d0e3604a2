/*
 * space/space_impl.h - internals shared by the files of space/ (not public).
 */
#ifndef NAS_SPACE_IMPL_H
#define NAS_SPACE_IMPL_H

#include <stddef.h>
#include "nas/space.h"

/* Edge index of (to <- from) in the NAS-Bench-201 order (1<-0), (2<-0),
 * (2<-1), (3<-0), (3<-1), (3<-2); requires 0 <= from < to <= 3. */
static inline int nas__cell_edge(int to, int from) { return (to - 1) * to / 2 + from; }

/* Write the op names whose bits are set in `mask` as "a, b, c" into buf
 * (all ops for mask == 0). Returns buf. */
const char *nas__op_list(unsigned mask, char *buf, size_t n);

/* What nas_space_key computes for s (nas_space_set_key_kind). */
nas_key_kind nas__space_key_kind(const nas_space *s);

/* All-ops mask of the registry. */
#define NAS__ALL_OPS_MASK ((1u << NAS_OP_COUNT) - 1u)

#endif
