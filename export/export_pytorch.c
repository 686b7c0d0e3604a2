/*
 * export/export_pytorch.c - a network as a readable PyTorch module.
 *
 * Writes one .py file defining NAS-Bench-201's TinyNetwork (Dong & Yang,
 * ICLR 2020) for one genotype - the same module names as NAS-Bench-201's
 * reference code and as nas_net_params, so the state_dict keys match the
 * .npz written next to it by nas_weights_save - plus that .npz. Nothing
 * but numpy and torch is needed to load it.
 *
 * Chain networks (issue 15) are written as their layer description
 * (nas/layers.h) spelled out in a table LAYERS and one generic module,
 * ChainNetwork, that builds each layer with the module path nas names its
 * parameters by (nested nn.Module containers for "s2.l0.dw"), so the
 * state_dict keys match the .npz too.
 */
#include <errno.h>  /* errno */
#include <math.h>   /* isfinite */
#include <stdio.h>  /* FILE, fprintf */
#include <string.h> /* strlen, strerror */
#include "export/export_impl.h" /* nas__export_data_py */
#include "nas/export.h"
#include "nas/layers.h"
#include "nas/trainer.h"
#include "trainer/net_impl.h" /* nas__net_desc */

/* The source text; %s/%d holes are filled by the writer below. */
static const char *const CLASSES_PY =
    "class Zero(nn.Module):\n"
    "    \"\"\"Edge 'none': contributes nothing (zeros shaped like its input).\"\"\"\n"
    "\n"
    "    def forward(self, x):\n"
    "        return x.mul(0.0)\n"
    "\n"
    "\n"
    "class ReLUConvBN(nn.Module):\n"
    "    \"\"\"ReLU -> Conv2d (no bias) -> BatchNorm2d: the nor_conv edges and the\n"
    "    reduction block's two convolutions.\"\"\"\n"
    "\n"
    "    def __init__(self, c_in, c_out, kernel, stride, padding):\n"
    "        super().__init__()\n"
    "        self.op = nn.Sequential(\n"
    "            nn.ReLU(inplace=False),\n"
    "            nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=padding, bias=False),\n"
    "            nn.BatchNorm2d(c_out, eps=1e-5, momentum=0.1),\n"
    "        )\n"
    "\n"
    "    def forward(self, x):\n"
    "        return self.op(x)\n"
    "\n"
    "\n"
    "def make_edge(op, channels):\n"
    "    if op == \"none\":\n"
    "        return Zero()\n"
    "    if op == \"skip_connect\":\n"
    "        return nn.Identity()\n"
    "    if op == \"nor_conv_1x1\":\n"
    "        return ReLUConvBN(channels, channels, 1, 1, 0)\n"
    "    if op == \"nor_conv_3x3\":\n"
    "        return ReLUConvBN(channels, channels, 3, 1, 1)\n"
    "    if op == \"avg_pool_3x3\":\n"
    "        return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)\n"
    "    raise ValueError(\"unknown op \" + op)\n"
    "\n"
    "\n"
    "class Cell(nn.Module):\n"
    "    \"\"\"A NAS-Bench-201 cell: node 0 is the input, node j sums op(node k) over\n"
    "    its edges (k < j), the output is the last node. layers[e] is edge e.\"\"\"\n"
    "\n"
    "    def __init__(self, genotype, channels):\n"
    "        super().__init__()\n"
    "        self.genotype = genotype\n"
    "        self.layers = nn.ModuleList(\n"
    "            make_edge(op, channels) for node in genotype for (op, _) in node)\n"
    "\n"
    "    def forward(self, x):\n"
    "        nodes = [x]\n"
    "        e = 0\n"
    "        for node in self.genotype:\n"
    "            total = None\n"
    "            for (_, k) in node:\n"
    "                y = self.layers[e](nodes[k])\n"
    "                total = y if total is None else total + y\n"
    "                e += 1\n"
    "            nodes.append(total)\n"
    "        return nodes[-1]\n"
    "\n"
    "\n"
    "class ResNetBasicblock(nn.Module):\n"
    "    \"\"\"Between stages: halves the resolution, doubles the channels.\"\"\"\n"
    "\n"
    "    def __init__(self, c_in, c_out):\n"
    "        super().__init__()\n"
    "        self.conv_a = ReLUConvBN(c_in, c_out, 3, 2, 1)\n"
    "        self.conv_b = ReLUConvBN(c_out, c_out, 3, 1, 1)\n"
    "        self.downsample = nn.Sequential(\n"
    "            nn.AvgPool2d(kernel_size=2, stride=2, padding=0),\n"
    "            nn.Conv2d(c_in, c_out, kernel_size=1, stride=1, padding=0, bias=False),\n"
    "        )\n"
    "\n"
    "    def forward(self, x):\n"
    "        return self.conv_b(self.conv_a(x)) + self.downsample(x)\n"
    "\n"
    "\n"
    "class TinyNetwork(nn.Module):\n"
    "    \"\"\"stem -> STAGES stages of CELLS_PER_STAGE cells (a ResNetBasicblock\n"
    "    between stages) -> BN-ReLU -> global average pool -> linear.\"\"\"\n"
    "\n"
    "    def __init__(self, genotype=GENOTYPE, channels=CHANNELS, stages=STAGES,\n"
    "                 cells_per_stage=CELLS_PER_STAGE, in_channels=IN_CHANNELS,\n"
    "                 num_classes=NUM_CLASSES):\n"
    "        super().__init__()\n"
    "        self.stem = nn.Sequential(\n"
    "            nn.Conv2d(in_channels, channels, kernel_size=3, padding=1, bias=False),\n"
    "            nn.BatchNorm2d(channels, eps=1e-5, momentum=0.1),\n"
    "        )\n"
    "        cells = []\n"
    "        c = channels\n"
    "        for stage in range(stages):\n"
    "            if stage > 0:\n"
    "                cells.append(ResNetBasicblock(c, 2 * c))\n"
    "                c *= 2\n"
    "            for _ in range(cells_per_stage):\n"
    "                cells.append(Cell(genotype, c))\n"
    "        self.cells = nn.ModuleList(cells)\n"
    "        self.lastact = nn.Sequential(nn.BatchNorm2d(c, eps=1e-5, momentum=0.1),\n"
    "                                     nn.ReLU(inplace=False))\n"
    "        self.global_pooling = nn.AdaptiveAvgPool2d(1)\n"
    "        self.classifier = nn.Linear(c, num_classes)\n"
    "\n"
    "    def forward(self, x):\n"
    "        x = self.stem(x)\n"
    "        for cell in self.cells:\n"
    "            x = cell(x)\n"
    "        x = self.global_pooling(self.lastact(x)).flatten(1)\n"
    "        return self.classifier(x)\n"
    "\n"
    "\n"
    "def load_weights(path):\n"
    "    \"\"\"The state_dict nas saved as .npz (one float32 array per parameter).\"\"\"\n"
    "    with np.load(path) as z:\n"
    "        return {k: torch.from_numpy(z[k]) for k in z.files if \"/\" not in k}\n"
    "\n"
    "\n";

/* The generic chain module (issue 15); LAYERS rows are (name, kind, src,
 * src2, in_c, out_c, kernel, stride, pad, groups, act, se_mid, se_gate, p). */
static const char *const CHAIN_PY =
    "ACTS = {\"relu\": nn.ReLU, \"relu6\": nn.ReLU6, \"hswish\": nn.Hardswish}\n"
    "\n"
    "\n"
    "class SE(nn.Module):\n"
    "    \"\"\"Squeeze-and-excitation: x * gate(fc2(relu(fc1(mean_hw(x))))); fc1, fc2\n"
    "    are 1x1 convolutions with bias; gate is hard sigmoid or sigmoid.\"\"\"\n"
    "\n"
    "    def __init__(self, c, mid, sigmoid):\n"
    "        super().__init__()\n"
    "        self.fc1 = nn.Conv2d(c, mid, 1, bias=True)\n"
    "        self.fc2 = nn.Conv2d(mid, c, 1, bias=True)\n"
    "        self.gate = nn.Sigmoid() if sigmoid else nn.Hardsigmoid()\n"
    "\n"
    "    def forward(self, x):\n"
    "        s = x.mean((2, 3), keepdim=True)\n"
    "        return x * self.gate(self.fc2(torch.relu(self.fc1(s))))\n"
    "\n"
    "\n"
    "def _place(root, path, module):\n"
    "    \"\"\"Register `module` at dotted `path` (\"s2.l0.dw\"), creating containers.\"\"\"\n"
    "    parts = path.split(\".\")\n"
    "    for p in parts[:-1]:\n"
    "        if not hasattr(root, p):\n"
    "            root.add_module(p, nn.Module())\n"
    "        root = getattr(root, p)\n"
    "    root.add_module(parts[-1], module)\n"
    "\n"
    "\n"
    "class ChainNetwork(nn.Module):\n"
    "    \"\"\"The layers of LAYERS in order; each reads layer `src` (-1: the input),\n"
    "    'add' also `src2`. Module paths are nas's parameter names.\"\"\"\n"
    "\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.paths = []\n"
    "        for (name, kind, src, src2, cin, cout, k, s, pad, groups, act, mid, gate, p) in LAYERS:\n"
    "            m = None\n"
    "            if kind in (\"conv\", \"dwconv\"):\n"
    "                m = nn.Conv2d(cin, cout, k, stride=s, padding=pad, groups=groups, bias=False)\n"
    "            elif kind == \"bn\":\n"
    "                m = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)\n"
    "            elif kind == \"act\":\n"
    "                m = ACTS[act]()\n"
    "            elif kind == \"se\":\n"
    "                m = SE(cin, mid, gate == \"sigmoid\")\n"
    "            elif kind == \"linear\":\n"
    "                name = \"classifier\"\n"
    "                m = nn.Linear(cin, cout)\n"
    "            if m is not None and kind != \"act\":\n"
    "                _place(self, name, m)\n"
    "            self.paths.append(m)\n"
    "\n"
    "    def forward(self, x):\n"
    "        outs = []\n"
    "        for layer, m in zip(LAYERS, self.paths):\n"
    "            kind, src, src2 = layer[1], layer[2], layer[3]\n"
    "            h = x if src < 0 else outs[src]\n"
    "            if kind == \"add\":\n"
    "                h = h + (x if src2 < 0 else outs[src2])\n"
    "            elif kind == \"pool\":\n"
    "                h = h.mean((2, 3), keepdim=True)\n"
    "            elif kind == \"dropout\":  # functional: follows self.training\n"
    "                h = nn.functional.dropout(h, layer[13], self.training)\n"
    "            elif kind == \"linear\":\n"
    "                h = m(h.flatten(1))\n"
    "            else:\n"
    "                h = m(h)\n"
    "            outs.append(h)\n"
    "        return outs[-1]\n"
    "\n"
    "\n"
    "def load_weights(path):\n"
    "    \"\"\"The state_dict nas saved as .npz (one array per state_dict key).\"\"\"\n"
    "    with np.load(path) as z:\n"
    "        return {k: torch.from_numpy(z[k]) for k in z.files if \"/\" not in k}\n"
    "\n"
    "\n";

/* The module's ending, after either network's classes and load_weights:
 * count_parameters() and a __main__ that loads the .npz into class `cls`. */
static void write_main_py(FILE *f, const char *cls)
{
    fprintf(f, "def count_parameters(model):\n"
               "    return sum(p.numel() for p in model.parameters())\n"
               "\n\n"
               "if __name__ == \"__main__\":\n"
               "    import os\n"
               "    import sys\n"
               "    model = %s()\n"
               "    weights = sys.argv[1] if len(sys.argv) > 1 else "
               "os.path.splitext(__file__)[0] + \".npz\"\n"
               "    model.load_state_dict(load_weights(weights))\n"
               "    model.eval()\n"
               "    print(\"parameters:\", count_parameters(model))\n",
            cls);
}

/* The usage note of class `cls` and the docstring's opening: "`what`
 * exported by nas VERSION`tail`", then the genotype, trial and proxy
 * accuracy of `a` (may be NULL). */
static void write_head_py(FILE *f, const char *cls, const nas_net_desc *d, const nas_arch *a,
                          const char *mod, const char *npz_base, const char *what,
                          const char *tail)
{
    fprintf(f, "# Usage: from %s import %s, load_weights; model = %s()\n", mod, cls, cls);
    fprintf(f, "#        model.load_state_dict(load_weights(\"%s\")); model.eval(); "
               "logits = model(x)  # x: float32 [N,%d,%d,%d]\n",
            npz_base, d->in_c, d->in_h, d->in_w);
    fprintf(f, "\"\"\"%s exported by nas %s%s\n\n", what, NAS_VERSION, tail);
    if (a && a->genotype[0])
        fprintf(f, "Genotype: %s\n", a->genotype);
    if (a && a->trial_id >= 0)
        fprintf(f, "Trial %lld of experiment \"%s\" (%s).\n", (long long)a->trial_id,
                a->experiment, a->db_path);
    if (a && isfinite(a->metrics.val_accuracy))
        fprintf(f, "Proxy validation accuracy %.4f after %d epoch(s).\n", a->metrics.val_accuracy,
                a->metrics.epochs);
}

/* The docstring's line on the inputs: Fashion-MNIST's normalisation, or
 * the data.format's (the helper's MEAN and STD). */
static void write_input_doc(FILE *f, const nas_arch *a)
{
    if (!a || !a->data.format[0])
        fprintf(f, "Input: images normalised as (pixel/255 - %.4f) / %.4f (Fashion-MNIST);\n",
                NAS_FMNIST_MEAN, NAS_FMNIST_STD);
    else
        fprintf(f, "Input: images of data.format = \"%s\" normalised per channel as\n"
                   "(x * SCALE - MEAN[c]) / STD[c];\n", a->data.format);
    fprintf(f, "load_data() reads the data set and preprocess() normalises raw pixels so.\n");
}

/* The chain network's module (CHAIN_PY) with its LAYERS table. */
static int write_chain_py(FILE *f, const nas_net_desc *d, const nas_arch *a, const char *mod,
                          const char *npz_base, nas_error *err)
{
    nas_layers L;
    int rc = nas_space_layers(d->space, &d->genotype, &L, err);
    if (rc)
        return rc;
    write_head_py(f, "ChainNetwork", d, a, mod, npz_base, "A chain (MobileNet-style) network",
                  ": the layer\ndescription of docs/spaces.md, one row per layer in LAYERS.");
    write_input_doc(f, a);
    fprintf(f, "Weights: %s (numpy .npz, one array per state_dict key).\n\"\"\"\n", npz_base);
    fprintf(f, "import numpy as np\nimport torch\nfrom torch import nn\n\n");
    fprintf(f, "IN_SHAPE = (%d, %d, %d)\nIN_CHANNELS = %d\nNUM_CLASSES = %d\n", L.in_c, L.in_h,
            L.in_w, L.in_c, L.classes);
    fprintf(f, "\n");
    fprintf(f, "# (name, kind, src, src2, in_c, out_c, kernel, stride, pad, groups, act, "
               "se_mid, se_gate, dropout_p)\nLAYERS = [\n");
    for (int i = 0; i < L.n; i++) {
        const nas_layer *l = &L.l[i];
        const char *act = l->kind == NAS_LAYER_ACT ? nas_act_name(l->act) : NULL;
        fprintf(f, "    (\"%s\", \"%s\", %d, %d, %d, %d, %d, %d, %d, %d, \"%s\", %d, \"%s\", %.17g),\n",
                l->name, nas_layer_kind_name(l->kind), l->src, l->src2, l->in_c, l->out_c,
                l->kernel, l->stride, l->pad, l->groups, act ? act : "", l->mid,
                l->gate_sigmoid ? "sigmoid" : "hsigmoid", l->p);
    }
    fprintf(f, "]\n\n\n");
    fputs(CHAIN_PY, f);
    nas_layers_free(&L);
    return NAS_OK;
}

/* The TinyNetwork module: usage note, docstring, GENOTYPE and sizes, the
 * Fashion-MNIST data helper and the classes (CLASSES_PY). */
static void write_cell_py(FILE *f, const nas_net_desc *d, const nas_arch *a, const char *mod,
                          const char *npz_base)
{
    write_head_py(f, "TinyNetwork", d, a, mod, npz_base,
                  "NAS-Bench-201 TinyNetwork (Dong & Yang, ICLR 2020)", ".");
    write_input_doc(f, a);
    fprintf(f, "Weights: %s (numpy .npz, one float32 array per state_dict key).\n\"\"\"\n",
            npz_base);
    fprintf(f, "import numpy as np\nimport torch\nfrom torch import nn\n\n");
    fprintf(f, "# (op, input node) for every edge; entry j-1 lists the edges into node j.\n");
    fprintf(f, "GENOTYPE = [\n");
    for (int j = 1; j < NAS_CELL_NODES; j++) {
        fprintf(f, "    [");
        for (int k = 0; k < j; k++) {
            int e = j * (j - 1) / 2 + k;
            fprintf(f, "%s(\"%s\", %d)", k ? ", " : "", nas_op_name(d->genotype.tok[e]), k);
        }
        fprintf(f, "],  # node %d\n", j);
    }
    fprintf(f, "]\n");
    fprintf(f, "CHANNELS = %d\nSTAGES = %d\nCELLS_PER_STAGE = %d\nIN_CHANNELS = %d\n"
               "NUM_CLASSES = %d\n",
            d->channels, d->stages, d->cells_per_stage, d->in_c, d->classes);
    fprintf(f, "\n\n");
    fputs(CLASSES_PY, f);
}

int nas_export_pytorch(nas_net *net, const nas_arch *a, const char *py_path, char *npz_path,
                       size_t n, nas_error *err)
{
    if (npz_path && n)
        npz_path[0] = 0;
    if (!net || !py_path)
        return nas_error_set(err, NAS_EINVAL, "nas_export_pytorch: NULL argument");
    const nas_net_desc *d = nas__net_desc(net);
    char npz[NAS_PATH_MAX + 8];
    size_t len = strlen(py_path);
    if (len > 3 && strcmp(py_path + len - 3, ".py") == 0)
        snprintf(npz, sizeof npz, "%.*s.npz", (int)(len - 3), py_path);
    else
        snprintf(npz, sizeof npz, "%s.npz", py_path);
    const char *npz_base = strrchr(npz, '/') ? strrchr(npz, '/') + 1 : npz;
    const char *py_base = strrchr(py_path, '/') ? strrchr(py_path, '/') + 1 : py_path;
    char mod[NAS_PATH_MAX];
    snprintf(mod, sizeof mod, "%s", py_base);
    if (strlen(mod) > 3 && strcmp(mod + strlen(mod) - 3, ".py") == 0)
        mod[strlen(mod) - 3] = 0;

    FILE *f = fopen(py_path, "w");
    if (!f)
        return nas_error_set(err, NAS_EIO, "cannot write %s: %s", py_path, strerror(errno));
    int rc = d->space ? write_chain_py(f, d, a, mod, npz_base, err) /* issue 15 */
                      : (write_cell_py(f, d, a, mod, npz_base), NAS_OK);
    if (rc == NAS_OK) { /* issue 28: every module carries its data's helper */
        nas__export_data_py(f, a);
        write_main_py(f, d->space ? "ChainNetwork" : "TinyNetwork");
    }
    int bad = ferror(f);
    int e = errno;
    if (fclose(f) != 0 || bad)
        return rc ? rc : nas_error_set(err, NAS_EIO, "writing %s: %s", py_path,
                                       strerror(e ? e : EIO));
    if (rc)
        return rc;
    rc = nas_weights_save(net, npz, err);
    if (rc)
        return rc;
    if (npz_path && n)
        snprintf(npz_path, n, "%s", npz);
    return NAS_OK;
}
