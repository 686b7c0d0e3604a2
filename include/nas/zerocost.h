/*
 * nas/zerocost.h - zero-cost proxies: training-free scores of an
 * architecture from its initial weights and one minibatch, or no data
 * (issue 31; docs/zero-cost.md). Every proxy runs on the net nas trains
 * (nas_net_create: a cell or a chain genotype, any backend), through the
 * same forward and backward as training.
 *
 * Weight layers are the convolutions (grouped and depthwise too) and the
 * linear layers (also SE's two 1x1 layers), as PyTorch's Conv2d and
 * Linear modules are in the reference implementation (Abdelfattah et al.,
 * "Zero-Cost Proxies for Lightweight NAS", ICLR 2021,
 * github.com/SamsungLabs/zero-cost-nas); biases and batch norms do not
 * count. Dropout is the identity in every proxy (nas is deterministic; the
 * reference runs PyTorch's train mode, which drops).
 */
#ifndef NAS_ZEROCOST_H
#define NAS_ZEROCOST_H

#include "nas/backend.h"
#include "nas/status.h"
#include "nas/trainer.h"

typedef enum nas_zc_proxy {
    /* data-free: sum over weights theta of theta * dR/dtheta with every
     * parameter replaced by |theta|, batch norms removed, an all-ones input
     * of batch 1 and R the sum of the logits (Tanaka et al., "Pruning neural
     * networks without any data by iteratively conserving synaptic flow",
     * NeurIPS 2020; the NAS-Bench-201 setting of Abdelfattah et al. 2021).
     * nas computes in the backend's fp32 (the reference: float64), with the
     * per-weight products and their sum in double on the host. */
    NAS_ZC_SYNFLOW = 0,
    /* one minibatch, train-mode forward: log|det K| with K[i][j] the number
     * of ReLUs (over every ReLU input unit of the net) on which images i
     * and j have the same binary code x > 0 (Mellor et al., "Neural
     * Architecture Search without Training", ICML 2021, eq. 2) */
    NAS_ZC_NASWOT,
    /* one minibatch, mean cross-entropy L: sum over weights of
     * |theta * dL/dtheta| (Lee et al., "SNIP", ICLR 2019, as Abdelfattah) */
    NAS_ZC_SNIP,
    /* one minibatch: sum over weight layers of ||dL/dW||_2 (Abdelfattah) */
    NAS_ZC_GRAD_NORM,
    /* one minibatch, train-mode forward, backward of R = sum of the logits:
     * J = dR/dx per image (B rows), C its B x B correlation matrix, score
     * -sum_i (log(l_i + k) + 1/(l_i + k)) over C's eigenvalues l_i, k = 1e-5
     * (Mellor et al., "Neural Architecture Search without Training",
     * arXiv:2006.04647v1, 2020; as Abdelfattah et al.'s jacob_cov) */
    NAS_ZC_JACOB_COV,
    /* trainable parameters and MACs per image (nas_count_net), the
     * baselines of White et al., "A Deeper Look at Zero-Cost Proxies", 2022 */
    NAS_ZC_PARAMS,
    NAS_ZC_MACS,
    NAS_ZC_COUNT
} nas_zc_proxy;

/* "synflow", "naswot", "snip", "grad_norm", "jacob_cov", "params", "macs";
 * NULL out of range. */
const char *nas_zc_name(nas_zc_proxy p);

/* The proxy named `name`. Errors: NAS_EINVAL naming the known proxies. */
int nas_zc_from_name(const char *name, nas_zc_proxy *out, nas_error *err);

/* 1 when the proxy reads a minibatch (naswot, snip, grad_norm, jacob_cov). */
int nas_zc_needs_data(nas_zc_proxy p);

/*
 * Score `net` (freshly initialised: nas_net_create) with proxy p. x[B,C,H,W]
 * images and y[B] labels (class indices as floats) on the net's backend,
 * B <= the net's max batch, for the proxies that need data (NULL for the
 * others; synflow needs a net of max batch >= 1). The net's parameters are
 * left as they were (synflow restores the signs it drops), its gradients
 * and BN running statistics are not. *score: larger is better for every
 * proxy. Errors: NAS_EINVAL (NULL argument, missing batch, a net without
 * ReLUs for naswot), NAS_ENAN (the score overflowed fp32: its message
 * says where), NAS_ENOMEM, backend errors.
 */
int nas_zc_score(nas_net *net, nas_zc_proxy p, const nas_tensor *x, const nas_tensor *y,
                 double *score, nas_error *err);

/*
 * Issue 31: a scorer of genotypes of one search - what `nas space
 * --zero-cost`, evaluator.kind = "zero-cost" and the warm-up (search.warmup)
 * and move proposal of the strategies share. `proxies` is a comma-separated
 * list of the names above. Each genotype's net is built as the search
 * builds it (nas_evaluator_net_desc: the space's widths, space.input or,
 * with a data-dependent proxy, the data's shape) with the weights of
 * PCG32(cfg->seed), on the cpu backend with one thread, so a score is a
 * deterministic function of (config, genotype). Data-dependent proxies
 * read one minibatch of cfg's training split (its normalisation, no
 * augmentation): proxy.batch_size images (default 64) drawn with
 * PCG32(cfg->seed), loaded once here. Errors: NAS_EINVAL (unknown proxy, a
 * data-dependent one when cfg->evaluator.kind is "table": no data), data
 * and backend errors, NAS_ENOMEM.
 */
typedef struct nas_zc_scorer nas_zc_scorer;
int nas_zc_scorer_create(const nas_config *cfg, const nas_space *sp, const char *proxies,
                         nas_zc_scorer **out, nas_error *err);
void nas_zc_scorer_destroy(nas_zc_scorer *z); /* NULL is a no-op */
/* How many proxies it scores, and the i-th (NAS_ZC_COUNT out of range). */
int nas_zc_scorer_count(const nas_zc_scorer *z);
nas_zc_proxy nas_zc_scorer_proxy(const nas_zc_scorer *z, int i);
/* scores[nas_zc_scorer_count] of genotype g, in the order of the list; a
 * proxy that fails scores NaN and the first failure is returned, with the
 * genotype and the reason in *err (the others are still scored). Errors:
 * NAS_EINVAL, the net's and nas_zc_score's. */
int nas_zc_scorer_score(nas_zc_scorer *z, const nas_genotype *g, double *scores, nas_error *err);

#endif
