/*
 * trainer/net_impl.h - internal accessors of nas_net for the evaluator
 * (not part of the public API).
 */
#ifndef NAS_TRAINER_NET_IMPL_H
#define NAS_TRAINER_NET_IMPL_H

#include "nas/layers.h" /* nas_layers */
#include "nas/trainer.h"

/* The description the net was built from; never NULL for a valid net. */
const nas_net_desc *nas__net_desc(const nas_net *net);

/* nas_net_create from layers L (nas/layers.h; the caller keeps them) instead
 * of desc's genotype; desc gives the input shape and classes. For tests of
 * graphs no space lowers to. Errors as nas_net_create. */
int nas__net_create_layers(nas_backend *be, const nas_net_desc *desc, const nas_layers *L,
                           int max_batch, uint64_t seed, nas_net **out, nas_error *err);

/* Largest batch the net's buffers hold. */
int nas__net_max_batch(const nas_net *net);
/* Backend the net lives on. */
nas_backend *nas__net_backend(const nas_net *net);
/* Learning rate at global step t of total: cosine lr/2 (1 + cos(pi t/T))
 * (Loshchilov & Hutter, SGDR, ICLR 2017, without restarts) or constant. */
double nas__train_lr(const nas_recipe *recipe, int t, int total);
/* One training step shared by nas_train and the full-training loop: cosine
 * (or constant) learning rate for global step t of total, forward and
 * backward on x[B,C,H,W] / labels y[B], NaN check, SGD, sync; bracketed by
 * nas__backend_step_begin / _step_end for loss-scaled precisions. *skipped
 * (may be NULL) = 1 when the loss scaler skipped the step because it
 * overflowed fp16 (weights untouched; *loss may then be inf or NaN).
 * Errors: NAS_ENAN (a non-finite loss no loss scaler accounts for; message
 * gives epoch, step and lr), backend errors. */
int nas__train_step(nas_net *net, const nas_tensor *x, const nas_tensor *y,
                    const nas_recipe *recipe, int t, int total, int ep, int s, int per_epoch,
                    float *loss, int *correct, int *skipped, nas_error *err);

/* Device tensors for the batches of a training or evaluation loop:
 * x[batch,C,H,W] images and y[batch,1,1,1] labels (as floats) of data set
 * d's shape; per = C*H*W floats per image. Shared by nas_train,
 * nas_net_evaluate and nas_train_resumable (trainer/train.c). */
typedef struct nas__batch_io {
    nas_tensor *x, *y;
    size_t per;
} nas__batch_io;
/* Create io's tensors for batches of up to `batch` images. Errors:
 * NAS_ENOMEM, backend errors (io is then freed). */
int nas__batch_io_init(nas__batch_io *io, nas_backend *be, const nas_dataset *d, int batch);
/* Views *xv, *yv of io's tensors for a batch of b <= batch images, filled
 * from host images hx[b*per] and labels hy[b]. Errors: backend errors. */
int nas__batch_io_upload(nas__batch_io *io, const float *hx, const float *hy, int b,
                         nas_tensor *xv, nas_tensor *yv);
/* Destroy io's tensors; io may be freed again (or never initialised
 * beyond zero). */
void nas__batch_io_free(nas__batch_io *io);

/* Training step the next training forward belongs to (global step t of
 * nas__train_step): dropout masks derive from it and the net's seed, so
 * a resumed run draws the masks an uninterrupted one does (issue 15). */
void nas__net_set_step(nas_net *net, uint64_t step);

/* SGD momentum buffer of parameter i (nas_net_params order); NULL for
 * buffers (BN running statistics) and out-of-range i. For checkpoints. */
nas_tensor *nas__net_param_momentum(nas_net *net, int i);

/* Copy every buffer (BN running mean and variance) aside / back (fp16
 * loss scaling: a skipped step must not keep the statistics its forward
 * moved; issue 19). restore without a save: NAS_EINVAL. Errors: NAS_ENOMEM,
 * backend errors. */
int nas__net_stats_save(nas_net *net);
int nas__net_stats_restore(nas_net *net);

/* The momentum of train-mode batch norms' running statistics (PyTorch's
 * convention, trainer/kernel_math.h; 0.1 after nas_net_create): for
 * nas_net_bn_recalibrate's cumulative average. Returns the previous one. */
float nas__net_set_bn_momentum(nas_net *net, float momentum);

/* Folded inference (trainer/net.c, "Folded inference"): `on` 0 makes eval
 * forwards run conv, batch norm and activation as separate steps, 1
 * folds them again (when the backend supports nas_conv2d_fwd_fused). For tests and
 * benchmarks. Returns the previous setting. */
int nas__net_set_fold(nas_net *net, int on);
/* How many convolutions run with a folded batch norm in eval mode; of
 * those, how many add straight into a node sum (oneDNN's sum post-op; into
 * *accumulating), how many are grouped / depthwise (into *grouped) and how
 * many run the activation after their batch norm as a post-op (into
 * *post_acts; issue 34). As planned: on a backend without the fused ops
 * none runs. Any out pointer may be NULL. */
int nas__net_folded(const nas_net *net, int *accumulating, int *grouped, int *post_acts);
/* Residual adds in eval mode (issue 34, item 4; nas_conv2d_fwd_fused_add):
 * how many folded convolutions are planned to add another input of the sum
 * whose buffer they write, and into *ran (may be NULL) how many did in the
 * last eval forward (0 where the backend has no such op). */
int nas__net_residual_adds(const nas_net *net, int *ran);
/* Issue 34: 0 makes training forwards run every batch norm and its
 * activation as two steps, 1 (the default) fuses them where net.c's plan
 * allows ("Fused batch norm"). For tests and benchmarks; returns the
 * previous setting. Takes effect from the next forward. */
int nas__net_set_bn_act(nas_net *net, int on);
/* How many batch norms run fused with the activation after them. */
int nas__net_bn_acts(const nas_net *net);
/* Issue 34 item 2 (one layout per network): the distinct non-plain
 * layout tags (nas_tensor.layout, backend-private) of the last forward's
 * activations, and after a training forward of the gradients the last
 * backward wrote, whose C is a multiple of 8 and H*W > 1. Writes the first
 * cap of them, in the order first met, into tags[cap]; returns how many
 * distinct tags there are (exact, may exceed cap; 0 for a NULL net or
 * before any forward). The cpu backend gives 1 (0 on ref). A folded eval
 * forward does not write the outputs of the convolutions whose batch norm
 * it folds, so their views keep the tags of the forward before. */
int nas__net_act_layouts(const nas_net *net, int *tags, int cap);
/* Issue 34, "Fused squeeze-and-excitation": how many of those the last
 * training forward ran with their SE block's pool (0 before any, or on a
 * backend without the kernel). */
int nas__net_se_fused(const nas_net *net);

/* ---- zero-cost proxies (evaluator/zerocost.c) ---- */
/* After a train-mode forward: backward with every logit's gradient set to
 * `value` (d(value * sum of outputs)/d theta; synflow). Errors: NAS_EINVAL
 * (no train-mode forward), NAS_ENOMEM, backend errors. */
int nas__net_backward_seed(nas_net *net, float value);
/* Upload the constant v to every element of t. Errors: NAS_ENOMEM,
 * backend errors. */
int nas__tensor_fill(nas_tensor *t, float v);
/* no_bn: batch norms are identities forward and backward (their gradients
 * zero); no_dropout: dropout is the identity also in train mode. 0, 0:
 * the ordinary net. */
void nas__net_set_proxy_mode(nas_net *net, int no_bn, int no_dropout);
/* dx non-NULL (shaped as the input batch of the next forward): every
 * following backward also writes the gradient w.r.t. the input images
 * there (jacob_cov); NULL: not computed, as in training. */
void nas__net_set_input_grad(nas_net *net, nas_tensor *dx);
/* Indices (nas_net_params order) of the weights of the convolutions
 * (grouped too) and linear layers, in execution order. Returns how many
 * there are; fills at most cap (idx may be NULL). */
int nas__net_weight_params(const nas_net *net, int *idx, int cap);
/* 1 when the net with its batch norms and dropout removed is positively
 * homogeneous of degree 1 in its input up to the classifier's bias (only
 * convolutions, ReLU, pooling, sums and the last linear layer), so that
 * scaling the input by s > 0 scales every activation gradient product by s. */
int nas__net_homogeneous(const nas_net *net);
/* The inputs of the ReLU steps (S_RELU, and S_ACT with NAS_FN_RELU) of the
 * last forward, in execution order; views owned by the net, valid until
 * the next forward; mult[i]: how many convolutions read that ReLU's
 * output, at least 1 (a cell's node feeds its conv edges through one
 * shared ReLU, where NAS-Bench-201's ReLUConvBN has one ReLU module per
 * edge). A ReLU run fused with its batch norm in a training forward gives
 * its output instead, which is positive exactly where its input is (the
 * input is not kept; NASWOT reads only the signs). Returns how
 * many; fills at most cap entries of out and mult. */
int nas__net_relu_inputs(nas_net *net, const nas_tensor **out, int *mult, int cap);

#endif
