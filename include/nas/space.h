/*
 * nas/space.h - search spaces, genotypes and the space.conf language.
 *
 * A genotype is a token sequence: position i holds one token from the
 * space's vocabulary, restricted to the tokens allowed at i. Every space
 * maps genotypes to a human string, a canonical key (equal for cells that
 * compute the same function) and back. Learned strategies (NAO) see only
 * the token form, so they work for any space.
 *
 * The NAS-Bench-201 cell space (Dong & Yang, "NAS-Bench-201", ICLR 2020):
 * 4 nodes, 6 edges, edge order (1<-0), (2<-0), (2<-1), (3<-0), (3<-1),
 * (3<-2); token i is the op on edge i; string form
 * `|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`.
 */
#ifndef NAS_SPACE_H
#define NAS_SPACE_H

#include <stdint.h>
#include <stddef.h>
#include "nas/status.h"
#include "nas/rng.h"
#include "nas/chain.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ops (generated from space/ops.def) ---------------------------------- */

typedef enum nas_op {
#define NAS_OP(enum_name, str) NAS_OP_##enum_name,
#include "nas/ops.def"
#undef NAS_OP
    NAS_OP_COUNT
} nas_op;

/* "nor_conv_3x3" for NAS_OP_NOR_CONV_3X3; NULL for an invalid op. */
const char *nas_op_name(int op);

/* Look up an op by name. Returns NAS_OK or NAS_ENOTFOUND. */
int nas_op_from_name(const char *name, int *op);

/* ---- genotypes ----------------------------------------------------------- */

#define NAS_GENOTYPE_MAX_LEN 64
#define NAS_CELL_NODES 4
#define NAS_CELL_EDGES 6
#define NAS_GENOTYPE_STR_MAX 512
/* issue 33: most genotypes search.enqueue (and nas run --enqueue) may list */
#define NAS_ENQUEUE_MAX 32
/* issue 32: most finalists one supernet search retrains (supernet.retrain_top;
 * they are the finalists experiment's search.enqueue) */
#define NAS_SUPERNET_FINALISTS_MAX NAS_ENQUEUE_MAX

/* A token sequence; for the cell space len = 6 and tok[i] is a nas_op. */
typedef struct nas_genotype {
    int len;
    uint8_t tok[NAS_GENOTYPE_MAX_LEN];
} nas_genotype;

/* ---- the search space ---------------------------------------------------- */

/* Space types: "cell" (above) and "chain" (nas/chain.h; decisions, layers
 * and counts in nas/layers.h). Every function below works for both. */
typedef enum nas_space_type { NAS_SPACE_CELL = 0, NAS_SPACE_CHAIN = 1 } nas_space_type;

/*
 * Issue 33: recipe choices. A list where a number is expected
 * (`proxy.lr = [0.05, 0.1]`, likewise proxy.weight_decay,
 * proxy.batch_size, and a list of policies for data.augment) makes that
 * setting a decision of the space: one more genotype token per such key,
 * after the type's own tokens, in this order (docs/space-conf.md, "Recipe
 * choices"). A key with n == 0 is not a decision (the config's scalar).
 */
enum {
    NAS_RECIPE_LR = 0,
    NAS_RECIPE_WEIGHT_DECAY,
    NAS_RECIPE_BATCH_SIZE,
    NAS_RECIPE_AUGMENT,
    NAS_RECIPE_KEYS
};
#define NAS_RECIPE_MAX_CHOICES 16
#define NAS_AUGMENT_STR_MAX 48
typedef struct nas_recipe_choices {
    int n[NAS_RECIPE_KEYS];                       /* choices of each key: 0 or 2..16 */
    double num[NAS_RECIPE_KEYS][NAS_RECIPE_MAX_CHOICES]; /* lr, weight_decay, batch_size */
    char augment[NAS_RECIPE_MAX_CHOICES][NAS_AUGMENT_STR_MAX]; /* canonical policies
                                                    (nas_augment_format; "none" for none) */
} nas_recipe_choices;

/* Plain description of a space, as parsed from the `space` group. */
typedef struct nas_space_desc {
    nas_space_type type;  /* "cell" */
    unsigned op_mask;     /* bit i set: nas_op i allowed on every edge */
    int channels;         /* C of the first stage; stage s has C * 2^s */
    int stages;           /* number of stages (NAS-Bench-201: 3) */
    int cells_per_stage;  /* N (NAS-Bench-201 default 5; proxy often 1) */
    /* space.input = [C, H, W]; space.classes: 0 = from the data set
     * (fashion-mnist: 1 x 28 x 28, 10 classes) */
    int in_c, in_h, in_w, classes;
    int line_stages;      /* line of space.stages in the config file (0: not there);
                             for messages only (nas_space_check_input at data load) */
    nas_chain_desc chain; /* type "chain" (nas/chain.h, docs/spaces.md) */
    /* issue 28: the data's shape and class count where known (0 = not
     * known: Fashion-MNIST's), used where space.input / space.classes are
     * not set; filled by nas_data_space_input (nas/data.h) before a chain
     * space is created. Not a setting: never in the canonical text. */
    int data_c, data_h, data_w, data_classes;
    /* issue 33: the proxy settings searched as tokens (from the proxy and
     * data groups, not from `space`); all n 0: none, the genotypes of
     * before */
    nas_recipe_choices recipe;
} nas_space_desc;

typedef struct nas_space nas_space; /* opaque */

/* Create a space from a validated description. The space copies `desc`.
 * Errors: NAS_EINVAL (empty op set, bad sizes), NAS_ENOMEM. */
int nas_space_create(const nas_space_desc *desc, nas_space **out, nas_error *err);
void nas_space_destroy(nas_space *s); /* NULL is a no-op */
const nas_space_desc *nas_space_get_desc(const nas_space *s);

/* Sequence length (cell: 6) and vocabulary size (cell: NAS_OP_COUNT). */
int nas_space_seq_len(const nas_space *s);
int nas_space_vocab_size(const nas_space *s);
/* 1 if token `tok` may stand at position `pos`. */
int nas_space_token_allowed(const nas_space *s, int pos, int tok);
/* Number of distinct genotypes (cell: |ops|^6). */
uint64_t nas_space_size(const nas_space *s);

/* Issue 33: tokens of a genotype that describe the network: the type's
 * own (cell: 6); the recipe choices' tokens follow them (seq_len minus
 * this many, 0 without recipe choices). A genotype with len equal to
 * nas_space_arch_len is the network alone: nas_space_format writes it
 * without the recipe words, and nas_space_layers, the net builders and the
 * exports take it. */
int nas_space_arch_len(const nas_space *s);
int nas_space_recipe_len(const nas_space *s);

/* 1 if g is a member of the space (right length, allowed tokens) and can be
 * trained (cell: some path carries information from input to output). */
int nas_space_is_valid(const nas_space *s, const nas_genotype *g);

/* Uniform sample over valid genotypes (rejection sampling). */
void nas_space_sample(const nas_space *s, nas_rng *r, nas_genotype *out);

/* One-position mutation (Real et al., AAAI 2019): pick a position
 * uniformly, replace its token with a different allowed one; retried until
 * the child is valid. */
void nas_space_mutate(const nas_space *s, nas_rng *r, const nas_genotype *parent,
                      nas_genotype *child);

/* Genotype -> string (cell: NAS-Bench-201 form). With recipe choices the
 * type's string is followed by one " KEY=VALUE" word per choice, in the
 * order of the NAS_RECIPE_* keys (`|nor_conv_3x3~0|+|...| lr=0.1
 * augment=crop4,flip`; KEY is lr, weight_decay, batch_size or augment);
 * a genotype of nas_space_arch_len tokens gets the type's string alone. Returns NAS_OK or
 * NAS_EINVAL when `buf` (at least NAS_GENOTYPE_STR_MAX) is too small. */
int nas_space_format(const nas_space *s, const nas_genotype *g, char *buf, size_t n);

/* String -> genotype. Errors: NAS_EFORMAT with a message naming the
 * offending part ("edge 3: unknown op 'conv9x9'"). With recipe choices
 * every KEY=VALUE word must be there, once, with a value of the key's list
 * (numbers compared by value: "0.10" is 0.1); a missing one is an error
 * that names it and its choices. */
int nas_space_parse(const nas_space *s, const char *str, nas_genotype *out, nas_error *err);

/* Issue 33: a bare genotype string (`nas train --genotype`, `nas export
 * --genotype`, ARCH.json) names a network: drop its trailing " KEY=VALUE"
 * recipe words (KEY: lr, weight_decay, batch_size, augment) in place, so
 * that a trial's genotype copied from `nas show` is accepted. Returns how
 * many words were dropped; 0 (str untouched) when a trailing word is not
 * one. */
int nas_genotype_strip_recipe(char *str);

/* Canonical key (recipe choices: followed by the same KEY=VALUE words as
 * nas_space_format's): equal exactly for genotypes that compute the same
 * function (conv edges have their own weights; space/cell_key.c lists the
 * function model and the equivalences it captures; 5,234 classes over the
 * 15,625 cells). `buf` must hold NAS_GENOTYPE_STR_MAX bytes. With
 * nas_space_set_key_kind(s, NAS_KEY_NB201) it is nas_space_nb201_str. */
void nas_space_key(const nas_space *s, const nas_genotype *g, char *buf, size_t n);

/* NAS-Bench-201's own "unique string" of a cell (Dong & Yang, ICLR 2020;
 * to_unique_str(consider_zero=True), 6,466 classes): nas's key before
 * issue 21. Not a functional key: it merges some cells that compute
 * different functions and keeps some equal ones apart (space/cell_key.c).
 * `buf` must hold NAS_GENOTYPE_STR_MAX bytes. */
void nas_space_nb201_str(const nas_genotype *g, char *buf, size_t n);

/* Which key nas_space_key computes: the functional key (the default), or
 * NAS-Bench-201's string, used only to replay trials that an older nas
 * proposed under that key (search/replay.c). */
typedef enum nas_key_kind { NAS_KEY_FUNCTION = 0, NAS_KEY_NB201 } nas_key_kind;
void nas_space_set_key_kind(nas_space *s, nas_key_kind kind);

/* ---- space.conf ---------------------------------------------------------- */

typedef enum nas_strategy_kind {
    NAS_STRATEGY_RANDOM = 0,
    NAS_STRATEGY_EVOLUTION,
    NAS_STRATEGY_NAO
} nas_strategy_kind;

/* Issue 31: "zero-cost" records a zero-cost proxy's score (evaluator.proxy,
 * nas/zerocost.h) as each trial's objective, training nothing. */
typedef enum nas_evaluator_kind {
    NAS_EVALUATOR_TRAIN = 0,
    NAS_EVALUATOR_TABLE,
    NAS_EVALUATOR_ZERO_COST,
    NAS_EVALUATOR_SUPERNET /* issue 32: subnets of a weight-sharing supernet (docs/one-shot.md) */
} nas_evaluator_kind;

/* Issue 17: multi-fidelity search (docs/multi-fidelity.md). The resource a
 * trial's budget is counted in, and the scheduler that hands out budgets
 * and promotions: none (every trial trains the whole proxy budget, as
 * before), successive halving (Jamieson & Talwalkar, AISTATS 2016),
 * Hyperband (Li et al., JMLR 2017) or ASHA (Li et al., MLSys 2020). */
typedef enum nas_fidelity_resource { NAS_FIDELITY_EPOCHS = 0, NAS_FIDELITY_IMAGES } nas_fidelity_resource;
typedef enum nas_fidelity_scheduler {
    NAS_FIDELITY_NONE = 0,
    NAS_FIDELITY_SH,
    NAS_FIDELITY_HYPERBAND,
    NAS_FIDELITY_ASHA
} nas_fidelity_scheduler;

typedef enum nas_schedule { NAS_SCHEDULE_COSINE = 0, NAS_SCHEDULE_CONSTANT } nas_schedule;

#define NAS_PATH_MAX 1024
#define NAS_NAME_MAX 128
#define NAS_MAX_OBJECTIVES 4

typedef struct nas_objective {
    char metric[NAS_NAME_MAX]; /* val_accuracy | latency_ms | macs | params */
    int maximize;              /* 1: larger is better */
} nas_objective;

/* The data group of space.conf (docs/data.md). Paths are resolved against
 * the config file's directory. */
typedef struct nas_data_conf {
    char dataset[NAS_NAME_MAX]; /* "fashion-mnist" (the shorthand), or a label when format is set */
    char dir[NAS_PATH_MAX];     /* /usr/share/datasets/fashion-mnist; cifar: the batch files;
                                   folder: train/ and test/ */
    int train_subset;           /* images used for proxy training; 0 = all left after valid */
    int valid;                  /* images held out of the training set for validation */
    /* issue 16: bring your own data */
    char format[16];            /* "" (the data.dataset shorthand) | "idx" | "npy" | "cifar" | "folder" */
    char train_images[NAS_PATH_MAX], train_labels[NAS_PATH_MAX]; /* idx, npy */
    char test_images[NAS_PATH_MAX], test_labels[NAS_PATH_MAX];   /* idx, npy; "" = no test set */
    char layout[8];             /* npy images: "" (inferred) | "nhw" | "nhwc" | "nchw" */
    int n_mean, n_std;          /* data.mean / data.std given: one per channel; 0 = computed */
    double mean[16], std[16];   /* (NAS_DATA_MAX_C) */
    /* issue 16, format "folder": every image resized to size[0] x size[1]
     * (height, width; data.size); 0, 0 = the images' own (shared) size */
    int size[2];
    /* where the folder reader keeps its decode cache (docs/data.md); not a
     * setting of the file: nas_config_load sets "<config dir>/nas-data",
     * nas run "<database>.data" (nas_data_cache_beside); "" = no cache */
    char cache_dir[NAS_PATH_MAX];
    /* issue 16, augmentation, split and loader (docs/data.md) */
    char augment[48];           /* data.augment as nas_augment_format writes it; "" = none */
    double valid_fraction;      /* data.valid given as a fraction in (0, 1); 0: a count (valid) */
    int valid_set;              /* issue 30: 1 when the file sets data.valid, 0 when it is the
                                   default (a resumed experiment then keeps its stored split:
                                   nas_config_stored_defaults) */
    int loader_threads;         /* data.loader_threads: batches prepared ahead (0: in the
                                   training thread); a running setting */
    /* where the config file set data.valid, data.train_subset and data.mean
     * (lines of conf_file; 0: not set there, or no file), so that an error
     * only the data's files reveal (nas_data_load: too few images, too many
     * channels) names the key's file:line; not settings (not in the
     * canonical text) */
    char conf_file[NAS_PATH_MAX];
    int line_valid, line_train_subset, line_mean;
    int line_augment; /* data.augment's line, for nas_config_check_augment */
} nas_data_conf;

/* The validation images data.valid takes from n training images: the
 * count, or floor(valid_fraction * n) and at least 1 (docs/data.md). */
int nas_config_valid_count(const nas_data_conf *dc, int n);

/*
 * Image augmentation (data.augment, `nas train --augment`; docs/data.md):
 * random crop with zero padding (He et al., "Deep Residual Learning",
 * CVPR 2016, 4.2: pad, then a random crop of the original size), random
 * horizontal flip, and cutout (DeVries & Taylor, "Improved Regularization
 * of Convolutional Neural Networks with Cutout", 2017: one square of
 * `cutout` pixels set to 0 after normalisation). All off: none.
 */
typedef struct nas_augment {
    int crop_pad; /* > 0: offsets uniform in [-crop_pad, crop_pad], outside pixels black */
    int flip;     /* 1: horizontal flip with probability 1/2 */
    int cutout;   /* > 0: side of the square cut out (centre uniform over the image) */
} nas_augment;

/* Parse "none" / "" or a comma-separated list of crop (= crop4), cropN
 * (N 1..64), flip, cutout (= cutout16), cutoutN (N 1..1024), each at most
 * once. Returns 0, or -1 (*a zeroed) for anything else. */
int nas_augment_parse(const char *s, nas_augment *a);

/* The canonical spelling: "none", or "cropN", "flip", "cutoutN" joined by
 * ',' in that order (e.g. "crop4,flip"), into buf[n]. */
void nas_augment_format(const nas_augment *a, char *buf, size_t n);

/* Whether augmentation a makes sense on images of h x w pixels (H x W):
 * a crop whose shift can reach the image's height or width (cropN with N
 * >= min(h, w)) can move the window off the image, and a cutout square
 * that can cover the whole image (cutoutN with N >= max(h, w)) can blank
 * it; either would train on images with nothing left of the data. Returns
 * NAS_OK, or NAS_ECONFIG with the reason and the largest N that fits in
 * msg[n] ("crop20 shifts the image by up to 20 pixels, but the images are
 * 16x20 (H x W): ..."). A NULL a is none (NAS_OK). */
int nas_augment_check(const nas_augment *a, int h, int w, char *msg, size_t n);

/* Most image channels a data set may have (per-channel normalisation). */
#define NAS_DATA_MAX_C 16

/*
 * What the data of an experiment turned out to be (issue 16): the image
 * shape C,H,W, the class count and the per-channel normalisation
 * x' = (x * scale - mean[c]) / std[c] with scale 1/255 for uint8 pixels
 * and 1 for float32 ones. Computed by the trainer's data readers
 * (nas/data.h), kept with the experiment as one line of its canonical
 * text (nas_data_info_format), read back by the exporters.
 */
typedef struct nas_data_info {
    int c, h, w, classes;
    int u8;                         /* 1: pixels are uint8, scaled by 1/255 before mean/std */
    float mean[NAS_DATA_MAX_C], std[NAS_DATA_MAX_C];
} nas_data_info;

/* Fashion-MNIST's: 1x28x28, 10 classes, uint8, mean 0.2860, std 0.3530
 * (the values data.dataset = "fashion-mnist" has always used). */
void nas_data_info_fmnist(nas_data_info *info);

/* The line kept in an experiment's canonical text:
 * "# data: input = [C, H, W]; classes = K; pixels = "uint8"; mean = [...]; std = [...];"
 * into buf[n] (with a trailing newline). Floats are printed so they read
 * back exactly. */
void nas_data_info_format(const nas_data_info *info, char *buf, size_t n);

/* Find that line in `canon` (a stored canonical text) and parse it.
 * Returns 1 when found and well formed, 0 otherwise (*info untouched). */
int nas_data_info_parse(const char *canon, nas_data_info *info);

/* Everything `nas run` needs, parsed from space.conf. Units in the names.
 * Defaults and ranges are listed in docs/space-conf.md. */
typedef struct nas_config {
    char path[NAS_PATH_MAX];       /* file the config came from */
    char experiment[NAS_NAME_MAX]; /* experiment = "..."; required */
    uint64_t seed;                 /* seed = 42; */

    nas_data_conf data;

    nas_space_desc space;

    struct {
        int epochs;
        int batch_size;
        double lr;
        double momentum;
        int nesterov;
        double weight_decay;
        nas_schedule schedule;
        int threads; /* threads per trial (kernel library) */
        char backend[NAS_NAME_MAX]; /* "cpu" (oneDNN+OpenBLAS) | "ref" | "cuda" | "auto" */
        char precision[16];  /* "fp32" (default) | "bf16" | "fp16" */
        int keep_weights;    /* proxy weights kept for export: 1 every trained trial's,
                                0 none, -1 (not set, the default) the best keep_top */
        int keep_top;        /* keep_weights not set: weights of the best keep_top trials
                                by the primary objective (0: none) */
        double weights_mb;   /* ... within this many MB on disk (0: no limit) */
        int bn_recalibrate;  /* issue 30: > 0: before every evaluation, recompute the BN
                                running statistics over this many training batches
                                (nas_net_bn_recalibrate); 0: off; default 10 (0
                                before: nas_config_stored_defaults) */
        int bn_recalibrate_set; /* 1 when the file sets bn_recalibrate, 0 when it is
                                   the default (a resumed experiment keeps its own) */
    } proxy;

    struct {
        nas_strategy_kind strategy;
        int trials;        /* budget: trained (or looked-up) architectures */
        int population;    /* evolution: P */
        int sample_size;   /* evolution: tournament S */
        struct {           /* NAO knobs (Luo et al. 2018) */
            int seed_archs;    /* random architectures before the model is used */
            int top_k;         /* best known archs moved in embedding space */
            int embed_size;
            int hidden_size;
            int epochs;        /* model training epochs per round */
            double lr;         /* Adam */
            double tradeoff;   /* lambda: weight of predictor loss vs reconstruction */
            double step;       /* initial step size eta */
            double step_growth;/* multiplier for eta until a new arch decodes */
            int max_steps;
            int batch_per_round; /* proposals per model round */
            int beam_width;    /* decoder beam width (1: greedy) */
            int max_edit;      /* candidates differ from their start in at most this
                                  many tokens (0: no limit) */
            double rank_weight;/* weight of the pairwise ranking loss (0: none) */
            int fill_neighbours; /* an empty candidate pool is filled with the
                                    predictor's best single-token neighbours of the
                                    top_k cells (0: uniform samples) */
        } nao;
        struct {           /* issue 17: multi-fidelity (docs/multi-fidelity.md) */
            nas_fidelity_resource resource; /* epochs | images (training images seen) */
            int min;       /* r: the smallest budget, in the resource's unit */
            int max;       /* R: a trial's full budget (the LR schedule spans it) */
            int eta;       /* reduction factor: 1/eta of a rung is promoted */
            nas_fidelity_scheduler scheduler; /* none | sh | hyperband | asha */
        } fidelity;
        /* issue 33: a running setting: this run stops as after Ctrl-C once
         * it has run this many seconds (0: no limit; docs/space-conf.md) */
        double time_limit;
        /* issue 33: genotypes evaluated before the strategy's own
         * proposals, in the space's string form (nas_space_format of the
         * parsed text: checked and canonical); a defining setting */
        int n_enqueue;
        char enqueue[NAS_ENQUEUE_MAX][NAS_GENOTYPE_STR_MAX];
        /* issue 31 (docs/zero-cost.md): score `candidates` random genotypes
         * with a zero-cost proxy and evaluate the `top` best first, in the
         * place of the strategy's random start; proxy "" = off. Defining. */
        struct {
            char proxy[16]; /* a nas/zerocost.h name; "" = no warm-up */
            int candidates; /* N, default 100 */
            int top;        /* K, default 10 */
        } warmup;
        /* issue 31: evolution trains, of `candidates` mutations of the
         * tournament's winner, the one the proxy scores best; proxy "" = off */
        struct {
            char proxy[16];
            int candidates; /* default 10 */
        } move_proposal;
    } search;

    struct {
        nas_evaluator_kind kind;
        char table[NAS_PATH_MAX];  /* CSV for kind == table */
        char column[NAS_NAME_MAX]; /* e.g. "cifar10-val" */
        char test_column[NAS_NAME_MAX]; /* optional, e.g. "cifar10-test" */
        double table_scale; /* table values are multiplied by this (percent -> fraction: 0.01) */
        int latency_runs;   /* median of N batch-1 forward passes */
        int latency_warmup;
        char proxy[16]; /* issue 31, kind == zero-cost: a nas/zerocost.h name */
    } evaluator;

    /* Issue 32, evaluator.kind = "supernet" (docs/one-shot.md): phase 1
     * trains one weight-sharing supernet with this recipe (the proxy's
     * momentum, Nesterov, weight decay, schedule, augmentation and data);
     * phase 2 evaluates each proposed genotype by inherited weights with BN
     * recalibrated on recal_batches batches, on the first `valid` images of
     * the validation split; phase 3 retrains the best retrain_top
     * stand-alone with the proxy recipe. Defining, but retrain_top. */
    struct {
        int epochs;        /* default 20 */
        int batch_size;    /* 0: proxy.batch_size */
        double lr;         /* 0: proxy.lr */
        int recal_batches; /* default 4 */
        int valid;         /* validation images per subnet; 0: all (default 1000) */
        int retrain_top;   /* K finalists retrained (running; default 5; 0: none) */
    } supernet;

    int n_objectives;
    nas_objective objectives[NAS_MAX_OBJECTIVES];
    struct {
        double latency_ms; /* 0 = no constraint */
        double mmacs;      /* millions of MACs; 0 = none */
        double params;     /* 0 = none */
    } constraints;

    struct {
        int count;            /* worker processes; 0 = in-process */
        char device[NAS_NAME_MAX]; /* cpu | cuda | auto */
        int trial_timeout_s;  /* 0 = no limit */
        int heartbeat_s;      /* worker heartbeat period; missed x3 = hung */
        int max_retries;      /* retries of a transiently failed trial */
        int n_gpus;           /* entries in gpus[]; -1 = "all" */
        int gpus[16];
        int trials_per_gpu;
        int ordered;          /* 1: the strategy observes results in trial order, proposal
                                 k after trials 1..k-N (reproducible with N workers);
                                 0: in completion order (search/controller.c) */
    } workers;
} nas_config;

/* Longest config text nas_config_load (the file itself) and
 * nas_config_parse_string read: 256 KiB (docs/space-conf.md, "Limits"; a
 * real space.conf is a few KB, and libconfig's scanner is quadratic in a
 * string's length). Longer texts are NAS_ECONFIG. */
#define NAS_CONFIG_MAX_BYTES (256 * 1024)

/* Issue 33: the recipe one trial trains with: the config's proxy.lr,
 * proxy.weight_decay, proxy.batch_size and data.augment, each replaced by
 * the value g's token picks when the key is a recipe choice of s (g: a
 * genotype of s, or of its nas_space_arch_len tokens: the config's). */
typedef struct nas_recipe_values {
    double lr, weight_decay;
    int batch_size;
    char augment[NAS_AUGMENT_STR_MAX]; /* data.augment's form: "" = none */
} nas_recipe_values;
void nas_config_recipe_values(const nas_config *cfg, const nas_space *s, const nas_genotype *g,
                              nas_recipe_values *out);

/* Checks data of shape [classes labels, C x H x W images] against
 * cfg->space.input and cfg->space.classes (evaluator kinds "train",
 * "supernet", "zero-cost" after loading the data). Returns NAS_OK when each
 * is unset (0) or equal; NAS_ECONFIG "CONF:LINE: space.input = [...] is not
 * the data's shape [...]" (or space.classes) otherwise; NAS_EINVAL for a
 * NULL cfg. */
int nas_config_check_data(const nas_config *cfg, int c, int h, int w, int classes, nas_error *err);

/* Checks data.augment (and each of its recipe choices) against the data's
 * h x w images with nas_augment_check (evaluator kinds "train" and
 * "supernet", nas supernet, after loading the data; zero-cost proxies do
 * not augment). Returns NAS_OK, NAS_ECONFIG "CONF:LINE: data.augment =
 * \"crop20\": crop20 shifts ..." otherwise, NAS_EINVAL for a NULL cfg. */
int nas_config_check_augment(const nas_config *cfg, int h, int w, nas_error *err);

/* Fill `cfg` with every default (experiment empty). */
void nas_config_defaults(nas_config *cfg);

/*
 * Parse and validate space.conf (libconfig syntax). Unknown keys, wrong
 * types and out-of-range values are errors.
 * Errors: NAS_EIO (cannot read file), NAS_ECONFIG with "FILE:LINE: what,
 * expected ..." in err->msg.
 */
int nas_config_load(const char *path, nas_config *cfg, nas_error *err);

/* Same, from a string; `name` is used in messages in place of a path. */
int nas_config_parse_string(const char *text, const char *name, nas_config *cfg, nas_error *err);

/*
 * Canonical text of every effective setting (defaults included), one
 * "key = value;" per line in a fixed order. Two configs that mean the same
 * search give the same text. The store keeps it with every experiment
 * (experiment.conf_canonical); nas_config_diff compares against it.
 * Returns a malloc'd string the caller frees, or NULL on out of memory.
 */
char *nas_config_canonical(const nas_config *cfg);

/* 1 when `name` is a valid experiment name (the `experiment` key,
 * `nas run --experiment`): non-empty, shorter than NAS_NAME_MAX bytes, no
 * control characters; 0 otherwise. */
int nas_config_name_ok(const char *name);

/*
 * Issue 22: an experiment is its name in a database plus its DEFINING
 * settings - those that change which architectures are proposed or what
 * is measured: seed, data (dataset, valid, train_subset), space, the proxy
 * recipe, the strategy and its knobs, the evaluator (but not where the
 * table lives), objectives, constraints. Every other key is a RUNNING
 * setting (it runs or extends the search): experiment, search.trials,
 * proxy.threads, proxy.backend, proxy.keep_weights, data.dir,
 * evaluator.table and every workers.* key. docs/space-conf.md marks each
 * key. 1 for a defining key (dotted, as in the canonical text: "seed",
 * "search.nao.lr"), 0 for a running one or an unknown key.
 */
int nas_config_key_defining(const char *key);

/*
 * Compare `cfg` with the canonical text an experiment was stored with
 * (`stored`, from nas_config_canonical of any nas version), key by key,
 * by the canonical text of each effective value. A key `stored` lacks (a
 * key added by a later nas) counts as its default, so a new key left at
 * its default is no difference (a key whose default changed since it was
 * added counts as the value experiments had then: proxy.bn_recalibrate 0,
 * nas_config_stored_defaults); a key `stored` has and this nas does not
 * know is ignored. `defining` 1 compares the defining keys, 0 the running
 * ones. Writes one "  KEY: OLD -> NEW\n" line per difference to out[n]
 * (truncated to fit; may be NULL when n is 0) and returns how many keys
 * differ, or -1 when out of memory.
 */
int nas_config_diff(const char *stored, const nas_config *cfg, int defining, char *out,
                    size_t n);

/*
 * Issue 30: defining settings whose default changed between nas versions
 * (data.valid, whose examples moved to the default 5000; proxy.bn_recalibrate,
 * 0 before, 10 now). For each such key that cfg leaves unset (its *_set flag
 * 0), when `stored` (an experiment's canonical text) was made with another
 * value, take that value: the stored line's, or, when the text has no line
 * for the key (made before the key existed), the value every experiment had
 * then (proxy.bn_recalibrate 0). So an experiment resumes as it was
 * created. Writes one "KEY = VALUE (stored; the default now is DEFAULT)\n" (or
 * "(made before the key existed; ...)") line per
 * key taken to out[n] (truncated to fit; may be NULL when n is 0). Returns
 * how many keys changed: 0 when none (keys set, the same values, no stored
 * text, an unreadable stored value).
 */
int nas_config_stored_defaults(nas_config *cfg, const char *stored, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* NAS_SPACE_H */
