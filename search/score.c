/*
 * search/score.c - how the controller judges a result: the score a
 * strategy observes (nas_search_score, constraints included) and whether
 * a done trial's training diverged (nas_search_diverged). Both are
 * declared in nas/search.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "nas/search.h"

double nas_search_score(const nas_config *cfg, const nas_trial_result *res, char *note, size_t n)
{
    if (note && n)
        note[0] = '\0';
    if (res->status != NAS_OK)
        return NAN;
    if (cfg->constraints.latency_ms > 0 && isfinite(res->latency_ms) &&
        res->latency_ms > cfg->constraints.latency_ms) {
        if (note && n)
            snprintf(note, n, "infeasible: latency %.3f ms > constraints.latency_ms = %g",
                     res->latency_ms, cfg->constraints.latency_ms);
        return NAN;
    }
    if (cfg->constraints.mmacs > 0 && res->macs > 0 && res->macs / 1e6 > cfg->constraints.mmacs) {
        if (note && n)
            snprintf(note, n, "infeasible: %.3f MMACs > constraints.mmacs = %g", res->macs / 1e6,
                     cfg->constraints.mmacs);
        return NAN;
    }
    if (cfg->constraints.params > 0 && res->params > 0 &&
        (double)res->params > cfg->constraints.params) {
        if (note && n)
            snprintf(note, n, "infeasible: %lld params > constraints.params = %g",
                     (long long)res->params, cfg->constraints.params);
        return NAN;
    }
    const char *metric = cfg->n_objectives > 0 ? cfg->objectives[0].metric : "val_accuracy";
    int maximize = cfg->n_objectives > 0 ? cfg->objectives[0].maximize : 1;
    double v;
    if (strcmp(metric, "latency_ms") == 0)
        v = res->latency_ms;
    else if (strcmp(metric, "macs") == 0)
        v = (double)res->macs;
    else if (strcmp(metric, "params") == 0)
        v = (double)res->params;
    else
        v = res->val_accuracy;
    if (!isfinite(v))
        return NAN;
    return maximize ? v : -v;
}

int nas_search_diverged(const nas_config *cfg, int classes, int valid, const nas_trial_result *res,
                        char *why, size_t n)
{
    if (classes < 2)
        classes = 10;
    if (valid == 0)
        valid = cfg->data.valid; /* 0 for a fraction: unknown here */
    if (why && n)
        why[0] = '\0';
    if (res->status != NAS_OK || !isfinite(res->val_accuracy))
        return 0; /* failed, or rejected before training */
    const double loss_max = 10.0 * log((double)classes);
    int trained = nas_evaluator_kind_trains(cfg);
    if ((trained || isfinite(res->train_loss)) && !(res->train_loss <= loss_max)) {
        if (why && n)
            snprintf(why, n, "diverged: train_loss %.4g is not finite or > %.2f (10 x ln %d)",
                     res->train_loss, loss_max, classes);
        return 1;
    }
    if (trained && valid > 0) {
        double p = 1.0 / classes;
        double chance = p + 3.0 * sqrt(p * (1.0 - p) / valid);
        /* chance >= 1 (2 classes and at most 9 validation images): every
         * accuracy, a perfect one too, would be "chance level"; no test */
        if (chance < 1.0 && res->val_accuracy <= chance) {
            if (why && n)
                snprintf(why, n,
                         "diverged: val_accuracy %.4f is chance level (<= %.4f: 1/%d + 3 "
                         "standard errors over %d validation images)%s",
                         res->val_accuracy, chance, classes, valid,
                         cfg->proxy.bn_recalibrate > 0
                             ? ", after BN recalibration"
                             : "; without BN recalibration: proxy.bn_recalibrate = N tells "
                               "stale BN statistics after a short proxy from divergence");
            return 1;
        }
    }
    return 0;
}
