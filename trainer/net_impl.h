/*
 * trainer/net_impl.h - internal accessors of nas_net for the evaluator
 * (not part of the public API).
 */
#ifndef NAS_TRAINER_NET_IMPL_H
#define NAS_TRAINER_NET_IMPL_H

#include "nas/trainer.h"

/* The description the net was built from; never NULL for a valid net. */
const nas_net_desc *nas__net_desc(const nas_net *net);
/* Largest batch the net's buffers hold. */
int nas__net_max_batch(const nas_net *net);
/* Backend the net lives on. */
nas_backend *nas__net_backend(const nas_net *net);

/* SGD momentum buffer of parameter i (nas_net_params order); NULL for
 * buffers (BN running statistics) and out-of-range i. For checkpoints. */
nas_tensor *nas__net_param_momentum(nas_net *net, int i);

#endif
