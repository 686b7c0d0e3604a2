/*
 * nas/export.h - a trained architecture as files other tools load (issue 5,
 * moved out of the kernel library by issue 13): the architecture JSON
 * `nas export --format json` writes and `nas train ARCH.json` reads, an
 * ONNX model, a PyTorch module. docs/export.md describes every format.
 * The network itself and its .npz weights stay in nas/trainer.h.
 */
#ifndef NAS_EXPORT_H
#define NAS_EXPORT_H

#include <signal.h> /* sig_atomic_t */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>  /* FILE */
#include "nas/status.h"
#include "nas/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the architecture JSON (export/export_json.c) ----------------------------- */

#define NAS_ARCH_FORMAT "nas-architecture"
/* Version 2 (issue 15) adds chain spaces ("space.type": "chain"); a cell
 * architecture is still written as version 1, unchanged, and both are
 * read. */
#define NAS_ARCH_VERSION 2
#define NAS_ARCH_VERSION_CELL 1

/*
 * An architecture as `nas export --format json` writes it and `nas train
 * ARCH.json` reads it: the network, the recipe it was proxy-trained with,
 * the data it was trained on and what the search measured. Missing
 * metrics are NaN (doubles) or -1 (counts); missing strings "".
 */
typedef struct nas_arch {
    char space_type[16];                 /* "cell" or "chain" */
    unsigned op_mask;                    /* cell: ops of the search space (bit = nas_op) */
    nas_space_desc space;                /* chain (issue 15): the whole space (stem, stages,
                                            head, input, classes); unused for cells */
    char genotype[NAS_GENOTYPE_STR_MAX]; /* NAS-Bench-201 string, or a chain genotype */
    nas_net_desc net;                    /* genotype tokens, widths (cell), input shape,
                                            classes; net.space is NULL here: whoever builds
                                            the network sets it (nas_arch_space) */
    nas_recipe recipe;                   /* the proxy recipe, seed = weight init and order */
    int bn_recalibrate;                  /* issue 30: proxy.bn_recalibrate, BN recalibration
                                            batches before evaluating (0: off) */
    struct {                             /* a multi-fidelity trial (search.fidelity, issue 17):
                                            what it trained; budget 0: none (single fidelity) */
        int images;                      /* 1: budgets in training images, 0: in epochs */
        int64_t budget;                  /* its highest stored rung's budget */
        int64_t max;                     /* fidelity.max: the LR schedule's span */
    } fidelity;
    char backend[NAS_NAME_MAX];          /* backend the trial ran on ("cpu", "ref") */
    int threads;
    struct {
        char dataset[NAS_NAME_MAX];      /* "fashion-mnist" */
        char dir[NAS_PATH_MAX];
        int train_subset, valid;         /* proxy split (nas_dataset_split) */
        uint64_t split_seed;
        char format[16];                 /* issue 16: data.format ("" = the dataset shorthand) */
        nas_data_info norm;              /* shape, classes, per-channel normalisation */
        /* issue 16: where nas train finds the same data (idx, npy; "" = none) */
        char train_images[NAS_PATH_MAX], train_labels[NAS_PATH_MAX];
        char test_images[NAS_PATH_MAX], test_labels[NAS_PATH_MAX];
        char layout[8];                  /* npy: data.layout */
        double valid_fraction;           /* data.valid as a fraction (valid is then 0) */
        int size[2];                     /* issue 28: folder data.size [H, W]; 0, 0 = unset */
    } data;
    struct {
        double val_accuracy, test_accuracy, train_loss, latency_ms, train_seconds;
        int64_t macs, params;
        int epochs;
    } metrics;
    int64_t trial_id, experiment_id;     /* -1 when not from a store */
    char experiment[NAS_NAME_MAX];
    char db_path[NAS_PATH_MAX];
    char weights[NAS_PATH_MAX];          /* trained proxy weights (.npz) or "" */
    char measured_by[16];                /* how metrics.val_accuracy was measured: "" a proxy
                                            training, "supernet" inherited weights (issue 32),
                                            "table" a benchmark table; JSON source.measured_by */
} nas_arch;

/* An empty description: every metric missing, ids -1, the input shape
 * 1x28x28, 10 classes, Fashion-MNIST's normalisation. */
void nas_arch_init(nas_arch *a);

/*
 * The search space of `a` (cell: its ops and widths; chain: a->space),
 * for parsing its genotype or building its network: a chain network's
 * nas_net_desc.space must point at it while the network lives. The
 * caller owns *out (nas_space_destroy). Errors: NAS_EINVAL (a bad space
 * description), NAS_ENOMEM.
 */
int nas_arch_space(const nas_arch *a, nas_space **out, nas_error *err);

/*
 * Write `a` as JSON (jansson) to `path` (schema: docs/export.md, format
 * NAS_ARCH_FORMAT; a cell architecture as version 1, a chain one as
 * version 2 with the space's space.conf text, its decisions and its layer
 * list). Errors: NAS_EIO; NAS_EINVAL (a chain genotype its space does
 * not lower), NAS_ENOMEM.
 */
int nas_arch_write_json(const nas_arch *a, const char *path, nas_error *err);

/*
 * Read and validate an architecture JSON: format and version (1 or 2), a
 * genotype its space parses (cell: the ops and widths; chain: the
 * space.conf text in "space.conf", parsed by nas_config_parse_string; its
 * "space.layers", when present, must be what the genotype lowers to),
 * positive sizes, a recipe in range. Unknown keys are ignored (forward
 * compatibility).
 * Errors: NAS_EIO (cannot read), NAS_EFORMAT ("FILE:LINE:COL: ..." for
 * bad JSON, "FILE: key 'recipe.lr' ..." for a bad or missing value).
 */
int nas_arch_read_json(const char *path, nas_arch *out, nas_error *err);

/* ---- ONNX (export/export_onnx.c) -------------------------------------------------- */

/* ONNX opset the exporter targets (ai.onnx, IR version 7). */
#define NAS_ONNX_OPSET 13

/*
 * Write `net` (eval mode: BN with running statistics) as an ONNX
 * ModelProto (protobuf-c from Debian's onnx.proto) to `path`: input
 * "input" float [batch,in_c,in_h,in_w] (batch symbolic), output "logits"
 * [batch,classes]; ops Conv, BatchNormalization, Relu, AveragePool
 * (count_include_pad 0), Add, Mul (only for a cell node no edge reaches:
 * x*0), GlobalAveragePool, Flatten, Gemm; initializers named as
 * nas_net_params. A chain network (desc.space set; issue 15) is written
 * from its layer description: Conv (with `group` for depthwise layers;
 * with a bias for SE's 1x1 convolutions), BatchNormalization, Relu,
 * relu6 as 6 * HardSigmoid(x; 1/6, 0), hswish as x * HardSigmoid(x; 1/6,
 * 1/2) (opset 13 has no HardSwish), SE as GlobalAveragePool, Conv, Relu,
 * Conv, HardSigmoid or Sigmoid, Mul; Add for residuals; dropout omitted.
 * `doc` (may be NULL) becomes the model's doc_string.
 * Errors: NAS_EUNSUPPORTED (built without protobuf-c), NAS_EIO,
 * NAS_ENOMEM, backend errors.
 */
int nas_export_onnx(nas_net *net, const char *path, const char *doc, nas_error *err);

/* ---- PyTorch (export/export_pytorch.c) --------------------------------------------- */

/*
 * Write a PyTorch module for `net` to `py_path` (readable Python: the
 * genotype spelled out, one class per block, module names matching
 * nas_net_params so state_dict keys match; a chain network: its layer
 * table and a generic ChainNetwork module) and its weights next to it,
 * with the .py suffix replaced by .npz (nas_weights_save). The file's
 * first two lines say how to use it. `a` (may be NULL) adds provenance
 * comments. The .npz path goes to npz_path (n bytes; may be NULL).
 * Errors: NAS_EIO, NAS_ENOMEM, backend errors.
 */
int nas_export_pytorch(nas_net *net, const nas_arch *a, const char *py_path, char *npz_path,
                       size_t n, nas_error *err);

/* ---- a stored trial (or any cell) as files: `nas export` (export/export_trial.c) ---- */

/*
 * What to export, and how (`nas export`'s options, docs/export.md). Exactly
 * one source: best (the best done, feasible trial of an experiment), trial
 * (a done trial by id) or genotype (any cell, no database). Strings are
 * borrowed for the call. nas_export_opts_init fills the defaults.
 */
typedef struct nas_export_opts {
    const char *db;          /* results database, opened read-only (default "nas.db") */
    const char *experiment;  /* best: the experiment's name; NULL: the most recent with a
                                done trial (nas_store_experiment_find) */
    int best;                /* 1: export the best trial */
    const char *by;          /* best: "COLUMN" or "COLUMN:max|min" to rank by (val_accuracy,
                                test_accuracy, score, train_loss, macs, params, latency_ms,
                                train_seconds); NULL: the experiment's first objective */
    int64_t trial;           /* > 0: that trial (it must be done); -1: none (default) */
    const char *genotype;    /* a NAS-Bench-201 cell string; NULL: none */
    int channels, cells;     /* genotype: first-stage channels C (16), cells per stage N (1) */
    uint64_t seed;           /* genotype: weight-init seed (0) */
    const char *format;      /* "json", "onnx" (opset 13) or "pytorch" (FILE.py + FILE.npz) */
    int init_weights;        /* 1: fresh weights (seed); 0: the trial's kept proxy weights
                                (default; a genotype has none, so init) */
    int final_weights;       /* 1 (issue 33): the weights of the trial's latest full
                                training (`nas train ARCH.json --db`: its checkpoint), with
                                that training's widths; not with genotype or init_weights */
    const char *out;         /* output file */
    const char *logits;      /* NULL, or an .npz to write nas's own logits to: images
                                float32 [B,C,H,W] (normalised), labels int64 [B], logits
                                float32 [B,classes] */
    int logits_batch;        /* B: the first B images of the experiment's test set (16) */
    const char *data;        /* data.dir where the data moved (Fashion-MNIST's idx files, the
                                CIFAR batches, the folder; must be a directory): --logits
                                reads it and the PyTorch DATA_DIR and JSON proxy_data.dir
                                name it; NULL: the experiment's data.dir, else NAS_FMNIST_DIR */
    const char *backend;     /* kernel backend for the network ("ref", default; "cpu") */
} nas_export_opts;

/* The result: what was exported, for the caller to report. */
typedef struct nas_export_result {
    nas_arch arch;           /* genotype, trial and experiment (trial_id -1 for a genotype),
                                metrics as recorded, kept-weights path (arch.weights) */
    int trained;             /* 1: the file holds the trial's trained weights */
    int64_t params;          /* parameters of the exported network */
    char npz[NAS_PATH_MAX + 8]; /* pytorch: the weights file written next to FILE.py */
    int picked;              /* best: 1 once the best trial was chosen (even when a later
                                step failed) */
    char by_metric[NAS_NAME_MAX]; /* best: the column ranked by */
    int by_maximize;         /* best: 1 highest first, 0 lowest first */
    int64_t final_training_id; /* final_weights: the final_training row exported; -1 */
    double final_test_accuracy; /* final_weights: its test accuracy */
    int logits_images;       /* logits: the test images written (o->logits_batch, or all of
                                a smaller test set) */
    /* issue 32: a trial of a one-shot search's supernet experiment (phase 2)
     * was never trained on its own: its weights are inherited from the
     * supernet (export/export_supernet.c) */
    char supernet[NAS_PATH_MAX + 32]; /* the checkpoint they came from ("" otherwise) */
    int supernet_recal_batches;       /* BN recalibrated on this many batches, as the trial
                                         (those run: fewer than supernet.recal_batches when
                                         the training split is smaller) */
    double supernet_val_accuracy;     /* their accuracy on the trial's validation images,
                                         measured again (the trial's val_accuracy) */
} nas_export_result;

/* The defaults: db "nas.db", trial -1, C 16, N 1, seed 0, trained weights,
 * logits_batch 16, backend "ref"; no source, format or output yet. */
void nas_export_opts_init(nas_export_opts *o);

/*
 * Check the options before any file is read: exactly one source, a
 * format, an output, `by` only with best, logits (and for pytorch the
 * module's FILE.npz) other than the output. Messages name the options as
 * `nas export` spells them. Errors: NAS_EINVAL.
 */
int nas_export_opts_check(const nas_export_opts *o, nas_error *err);

/*
 * Export one architecture (docs/export.md): choose the trial (best by the
 * experiment's first objective among trials meeting its constraints, or
 * by o->by; or o->trial) from the store, rebuild its network as the
 * search built it (the experiment's stored config: space, channels,
 * cells, seed), load its kept proxy weights unless o->init_weights (a
 * JSON only names them in source.weights), check the parameter count
 * against the recorded one, then write o->out as architecture JSON
 * (nas_arch_write_json), ONNX (nas_export_onnx) or a PyTorch module +
 * .npz (nas_export_pytorch); with o->logits, also nas's eval-mode logits
 * (the forward pass on the backend o->backend) on the first images of the
 * experiment's own test set, read and normalised as the search did
 * (Fashion-MNIST's for the shorthand, else data.format's reader with the
 * experiment's mean/std; issue 28), read before anything is written.
 * Issue 32: a trial of a supernet experiment (evaluator.kind = "supernet",
 * phase 2 of a one-shot search) has no kept weights; unless o->init_weights
 * or o->final_weights, the weights it was measured with are rebuilt: the
 * subnet's slice of the supernet checkpoint beside the database, BN
 * recalibrated as the trial's evaluation did, on the experiment's data
 * (r->supernet, r->supernet_val_accuracy: nas_evaluator_supernet_subnet_save;
 * a temporary .npz removed once loaded).
 * Writes only o->out (and its .npz) and o->logits, and nothing when it
 * fails (a written o->out is removed); never the database. One exception,
 * a supernet trial of data.format = "folder": rebuilding its weights reads
 * the training images through the decoded-image cache beside the
 * database (DB.data/, nas_data_cache_beside), which it creates when it is
 * missing, as `nas run` would. `r` (may not
 * be NULL) is filled as far as the export got.
 * Errors: NAS_EINVAL (bad options, a trial not done, a bad genotype, a
 * parameter mismatch), NAS_ENOTFOUND (no such database, experiment or
 * trial; no trial to export; no kept weights, e.g. for a table-evaluator
 * experiment), NAS_EFORMAT (the experiment's stored config), NAS_EDB,
 * NAS_EIO, NAS_ENOMEM, backend errors.
 */
int nas_export_trial(const nas_export_opts *o, nas_export_result *r, nas_error *err);

/* ---- training an architecture fully: `nas train` (export/arch_train.c) -------------- */

/*
 * The full-training recipe (issue 22, docs/export.md "nas train"): what
 * nas_arch_train uses unless told otherwise - SGD with Nesterov momentum
 * 0.9 and weight decay 5e-4, the learning rate from 0.1 down to 0 on a
 * cosine per step (NAS-Bench-201's optimiser, Dong & Yang, ICLR 2020),
 * batch 128, 20 epochs over the 60,000 training images, random crop (4
 * pixels) and horizontal flip, on every online core. `proxy` uses the
 * recipe in ARCH.json instead (the search's proxy).
 */
#define NAS_FULL_EPOCHS 20
#define NAS_FULL_BATCH 128
#define NAS_FULL_LR 0.1
#define NAS_FULL_MOMENTUM 0.9
#define NAS_FULL_WEIGHT_DECAY 5e-4
#define NAS_FULL_AUGMENT "crop,flip"

/*
 * What to train, and how (`nas train`'s options). Exactly one of arch
 * (an ARCH.json from nas_arch_write_json) and genotype (a NAS-Bench-201
 * cell: C 16, N 1, 3 stages, all five ops, seed 0, data NAS_FMNIST_DIR).
 * Every other field left at nas_arch_train_opts_init's value keeps the
 * recipe's (numbers -1, strings NULL, subset/test_subset/stop_after 0).
 * Strings are borrowed for the call.
 */
/* Issue 30: nas train's BN recalibration batches for a full training (not
 * --proxy), the search's default; and the file beside the checkpoint that
 * keeps the tested weights with their recalibrated statistics (what `nas
 * export --weights final` exports; the checkpoint keeps training's). */
#define NAS_TRAIN_BN_RECALIBRATE_DEFAULT 10
#define NAS_FINAL_RECAL_SUFFIX ".recal.npz"

typedef struct nas_arch_train_opts {
    const char *arch;        /* ARCH.json, or NULL */
    const char *genotype;    /* or a cell string, or NULL */
    int proxy;               /* 1 (ARCH.json only): redo the search's proxy training - its
                                recipe, train/validation split, threads and backend */
    int epochs, batch;       /* recipe overrides (> 0) */
    double lr, momentum, weight_decay; /* recipe overrides (>= 0) */
    const char *schedule;    /* "cosine" or "constant" */
    int have_seed;           /* 1: seed replaces the recipe's seed */
    uint64_t seed;
    const char *augment;     /* nas_augment_parse's: "none", "crop", "cropN", "flip",
                                "cutoutN", lists like "crop,flip"; NULL: crop,flip
                                (full) or none (proxy) */
    int channels, cells;     /* network overrides: first-stage channels (> 0), cells per
                                stage (>= 0); the genotype stays */
    int subset, test_subset; /* train on the first-drawn `subset` training images (0: all;
                                not with proxy), test on the first `test_subset` (0: all) */
    const char *db;          /* record the result in this store's final_training; NULL: not */
    const char *checkpoint;  /* written after every epoch and resumed from when present;
                                NULL: ARCH.<mode>-e<N>-s<S>[-<augment>][-<precision>].ckpt.npz
                                beside ARCH.json (genotype: none); "none": none */
    int threads;             /* >= 0: kernel threads (0: the backend's default); -1: every
                                online core (proxy: the trial's) */
    const char *backend;     /* "cpu", "ref" (or "cuda"); NULL: "ref" when ARCH.json says
                                ref, else "cpu" */
    const char *precision;   /* "fp32" (NULL), "bf16" or "fp16" (nas_backend_set_precision) */
    const char *data;        /* data.dir where the data moved (Fashion-MNIST's idx files,
                                cifar, folder); NULL: ARCH.json's; idx and npy name their
                                files, so a warning on o->progress says it is not used */
    int stop_after;          /* > 0: stop with NAS_EINTR after this epoch (tests) */
    int bn_recalibrate;      /* >= 0: BN recalibration batches before testing
                                (nas_net_bn_recalibrate); -1: ARCH.json's with proxy, else
                                NAS_TRAIN_BN_RECALIBRATE_DEFAULT */
    double progress_s;       /* seconds between in-epoch progress lines (0: every step);
                                -1: 1 when `progress` is a terminal, else 10 */
    FILE *out;               /* the report: set-up, epoch lines, results; NULL: none */
    FILE *progress;          /* in-epoch progress lines (redrawn on a terminal); NULL: none */
    volatile sig_atomic_t *stop; /* non-zero (set by a signal handler): stop after the
                                    current step with NAS_EINTR; may be NULL */
} nas_arch_train_opts;

/* What a training measured. Missing values NaN / -1. */
typedef struct nas_arch_train_result {
    const char *stage;       /* the step that failed ("loading Fashion-MNIST", "training",
                                ...; also the prefix of err's message); NULL when the
                                failure was in the inputs (ARCH.json, genotype, options) */
    nas_arch arch;           /* the architecture trained (after channels/cells) */
    nas_recipe recipe;       /* the recipe used */
    int train_images, test_images, epochs_done, resumed_from;
    double test_accuracy, test_loss;
    double val_accuracy;     /* proxy: on the search's validation split */
    double train_loss, train_accuracy, train_seconds; /* seconds of training steps */
    int64_t params, macs;    /* per image */
    char checkpoint[NAS_PATH_MAX + 128]; /* "" when none */
    int64_t final_training_id; /* the row written with db; -1 */
    double wait_seconds;     /* part of train_seconds the trainer waited for its batches
                                (issue 16: the loader's share) */
    int already_done;        /* issue 33: 1 when o->db already held this very training
                                (final_training_id is that row; test_accuracy and
                                test_loss its numbers): nothing trained or recorded */
} nas_arch_train_result;

/* Every override unset (see nas_arch_train_opts); out, progress, stop NULL. */
void nas_arch_train_opts_init(nas_arch_train_opts *o);

/*
 * Check the options before any file is read: one of arch and genotype;
 * proxy only with arch and without subset or augment; a known augment,
 * schedule and precision. Messages name the options as `nas train` spells
 * them. Errors: NAS_ECONFIG.
 */
int nas_arch_train_opts_check(const nas_arch_train_opts *o, nas_error *err);

/*
 * Train one architecture fully (docs/export.md "nas train"): read
 * o->arch (nas_arch_read_json) or parse o->genotype; take the full recipe
 * (NAS_FULL_*) with ARCH.json's seed, or with o->proxy the search's proxy
 * recipe and split, then the overrides; open o->db first (a bad store
 * fails before hours of training); load Fashion-MNIST (train and test
 * split); create the backend (o->threads, o->precision) and the network
 * (NCHW input [batch,1,28,28]); train with nas_train_resumable, writing
 * the checkpoint after every epoch and resuming from it when it exists;
 * evaluate on the test images (and, with proxy, the validation split);
 * with o->db, when the store already holds this very training (same
 * trial, ARCH.json, recipe, test images, augmentation, backend, training
 * images and checkpoint; issue 33), say so on o->out and stop (NAS_OK,
 * r->already_done) before building anything; else append a final_training row (nas_store_final_training_put:
 * recipe, augmentation, backend, accuracies, seconds, params, MACs,
 * absolute ARCH.json and checkpoint paths). Reports on o->out and
 * o->progress as it goes. Writes only the checkpoint and the store.
 * Errors: NAS_ECONFIG (bad options, or a recipe with 0 epochs),
 * NAS_EIO / NAS_EFORMAT (ARCH.json; data files), NAS_EINVAL (a bad
 * genotype; proxy without a validation split; a crop or cutout, given or
 * the default crop,flip, that can leave nothing of the data's images:
 * nas_augment_check), NAS_EUNSUPPORTED (a data
 * set other than Fashion-MNIST; a precision the backend lacks),
 * NAS_EINTR (o->stop or stop_after: the checkpoint holds the last
 * finished epoch; the message says how to resume), NAS_EEXIST (the
 * checkpoint is another run's), NAS_ENAN, NAS_EDB, NAS_ENOMEM, backend
 * errors. r->stage says which step failed.
 */
int nas_arch_train(const nas_arch_train_opts *o, nas_arch_train_result *r, nas_error *err);

#ifdef __cplusplus
}
#endif
#endif /* NAS_EXPORT_H */
