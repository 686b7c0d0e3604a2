/*
 * search/proxy_check_impl.h - the state `nas proxy-check` shares between
 * its run (search/proxy_check.c) and its figures and verdict
 * (search/proxy_report.c). Not a public header: only search/ includes it.
 */
#ifndef NAS_SEARCH_PROXY_CHECK_IMPL_H
#define NAS_SEARCH_PROXY_CHECK_IMPL_H

#include <stdint.h>
#include <stdio.h>
#include "nas/fidelity.h"
#include "nas/search.h"
#include "nas/store.h"
#include "search/run_lock.h"

#define NAS__PC_STATE "proxy_check.params" /* strategy_state: K, S and the ladder */
#define NAS__PC_QUICK_ARCHS 6              /* --quick: architectures (docs/proxy.md) */

enum { NAS__PC_TODO = 0, NAS__PC_RUN, NAS__PC_DONE, NAS__PC_FAIL };

typedef struct nas__pc {
    const nas_config *cfg;
    nas_config *wcfg; /* the workers' copy (no latency, no kept weights, the ladder's unit) */
    const nas_proxy_check_opts *o;
    FILE *log, *out;
    int tty;
    nas_space *space;
    nas_evaluator *ev;
    nas_pool *pool;
    nas_store *st;
    nas_run_lock lock;
    int locked;
    int64_t exp;
    char name[NAS_NAME_MAX];
    const char *status; /* the experiment's status at the end */
    int K, S, R;        /* architectures, seeds, rungs */
    int64_t budget[NAS_FID_MAX_RUNGS], max;
    int images;         /* budgets count training images (else epochs) */
    nas_genotype *g;    /* K sampled architectures */
    char (*gs)[NAS_GENOTYPE_STR_MAX];
    nas_store_pc_row *row; /* K S R trainings, NAS__PC_INDEX */
    unsigned char *state;  /* NAS__PC_* of each */
    int n_stored, ran;
    int valid, classes;
    char ckpt_dir[NAS_PATH_MAX];
    double t0;
} nas__pc;

/* Training (architecture a, seed j, rung k). */
#define NAS__PC_INDEX(p, a, j, k) (((a) * (p)->S + (j)) * (p)->R + (k))

/* Print the figures of every rung, the verdict and the last line on
 * p->out (docs/proxy.md). Errors: NAS_ENOMEM. */
int nas__pc_report(const nas__pc *p, nas_error *err);

#endif
