/*
 * nas/export.h - a trained architecture as files other tools load (issue 5,
 * moved out of the kernel library by issue 13): the architecture JSON
 * `nas export --format json` writes and `nas train ARCH.json` reads, an
 * ONNX model, a PyTorch module. docs/export.md describes every format.
 * The network itself and its .npz weights stay in nas/trainer.h.
 */
#ifndef NAS_EXPORT_H
#define NAS_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include "nas/status.h"
#include "nas/trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the architecture JSON (export/export_json.c) ----------------------------- */

#define NAS_ARCH_FORMAT "nas-architecture"
#define NAS_ARCH_VERSION 1

/*
 * An architecture as `nas export --format json` writes it and `nas train
 * ARCH.json` reads it: the network, the recipe it was proxy-trained with,
 * the data it was trained on and what the search measured. Missing
 * metrics are NaN (doubles) or -1 (counts); missing strings "".
 */
typedef struct nas_arch {
    char space_type[16];                 /* "cell" */
    unsigned op_mask;                    /* ops of the search space (bit = nas_op) */
    char genotype[NAS_GENOTYPE_STR_MAX]; /* NAS-Bench-201 string */
    nas_net_desc net;                    /* genotype tokens, widths, input shape, classes */
    nas_recipe recipe;                   /* the proxy recipe, seed = weight init and order */
    char backend[NAS_NAME_MAX];          /* backend the trial ran on ("cpu", "ref") */
    int threads;
    struct {
        char dataset[NAS_NAME_MAX];      /* "fashion-mnist" */
        char dir[NAS_PATH_MAX];
        int train_subset, valid;         /* proxy split (nas_dataset_split) */
        uint64_t split_seed;
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
} nas_arch;

/* An empty description: every metric missing, ids -1, the input shape
 * 1x28x28, 10 classes. */
void nas_arch_init(nas_arch *a);

/*
 * Write `a` as JSON (jansson) to `path` (schema: docs/export.md, format
 * NAS_ARCH_FORMAT version NAS_ARCH_VERSION). Errors: NAS_EIO.
 */
int nas_arch_write_json(const nas_arch *a, const char *path, nas_error *err);

/*
 * Read and validate an architecture JSON: format and version, a genotype
 * the cell space parses (and whose tokens match), positive sizes, a
 * recipe in range. Unknown keys are ignored (forward compatibility).
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

#ifdef __cplusplus
}
#endif
#endif /* NAS_EXPORT_H */
