"""experiments/common/nb201_torch.py - the PyTorch NAS-Bench-201 cell network
and Fashion-MNIST reader shared by experiments/bench-train/bench_torch.py and
experiments/bench-gpu/bench_torch.py (our own definition, written from the
layer table in ../shared/reference/nb201-tinynetwork-fmnist.md).

TinyNetwork (Dong & Yang, "NAS-Bench-201", ICLR 2020): stem (3x3 conv + BN),
3 stages of `cells` cells at c, 2c, 4c channels joined by residual reduction
blocks, BN-ReLU, global average pool, linear. A "none" edge contributes zero
and has no module (no work); a node with only "none" inputs is zero.
Inputs are NCHW float32 (N, 1, 28, 28); output logits (N, classes).
"""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")

# Fashion-MNIST training-set mean and standard deviation, as nas normalises
MEAN, STD = 0.2860, 0.3530


def parse_genotype(s):
    """'|op~0|+|op~0|op~1|+|op~0|op~1|op~2|' -> [[(op, src)], ...] per node.

    Raises ValueError for an op outside OPS or a count of nodes other than 3.
    """
    nodes = []
    for part in s.split("+"):
        edges = []
        for tok in part.strip("|").split("|"):
            op, src = tok.split("~")
            if op not in OPS:
                raise ValueError("unknown op %r" % op)
            edges.append((op, int(src)))
        nodes.append(edges)
    if len(nodes) != 3:
        raise ValueError("expected 3 nodes in %r" % s)
    return nodes


def load_idx(path):
    """An idx file (gzip) as a uint8 numpy array of its stated dimensions."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, split, limit=0):
    """Fashion-MNIST `split` ("train" or "test") from data_dir's idx.gz files:
    images (N, 1, 28, 28) float32 scaled to [0,1] then normalised with
    MEAN/STD, labels (N,) int64. limit > 0 keeps the first `limit` images."""
    prefix = "train" if split == "train" else "t10k"
    x = load_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    y = load_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    if limit > 0:
        x, y = x[:limit], y[:limit]
    x = (x.astype(np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(x[:, None, :, :].copy()), torch.from_numpy(y.astype(np.int64))


class ReLUConvBN(nn.Sequential):
    def __init__(self, cin, cout, k, stride, pad):
        super().__init__(nn.ReLU(inplace=False), nn.Conv2d(cin, cout, k, stride, pad, bias=False),
                         nn.BatchNorm2d(cout))


class Cell(nn.Module):
    def __init__(self, genotype, c):
        super().__init__()
        self.nodes = genotype
        self.ops = nn.ModuleDict()
        for j, edges in enumerate(genotype, start=1):
            for op, k in edges:
                key = "%d_%d" % (j, k)
                if op == "nor_conv_3x3":
                    self.ops[key] = ReLUConvBN(c, c, 3, 1, 1)
                elif op == "nor_conv_1x1":
                    self.ops[key] = ReLUConvBN(c, c, 1, 1, 0)
                elif op == "avg_pool_3x3":
                    self.ops[key] = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
                elif op == "skip_connect":
                    self.ops[key] = nn.Identity()
                # "none" contributes zero: no module, no work

    def forward(self, x):
        vals = [x]
        for j, edges in enumerate(self.nodes, start=1):
            acc = None
            for op, k in edges:
                key = "%d_%d" % (j, k)
                if key not in self.ops:
                    continue
                v = self.ops[key](vals[k])
                acc = v if acc is None else acc + v
            vals.append(acc if acc is not None else torch.zeros_like(x))
        return vals[-1]


class Reduction(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv_a = ReLUConvBN(cin, cout, 3, 2, 1)
        self.conv_b = ReLUConvBN(cout, cout, 3, 1, 1)
        self.downsample = nn.Sequential(nn.AvgPool2d(2, 2, 0),
                                        nn.Conv2d(cin, cout, 1, 1, 0, bias=False))

    def forward(self, x):
        return self.conv_b(self.conv_a(x)) + self.downsample(x)


class TinyNetwork(nn.Module):
    def __init__(self, genotype, c=16, cells=1, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))
        layers = []
        for s in range(3):
            if s > 0:
                layers.append(Reduction(c, 2 * c))
                c *= 2
            for _ in range(cells):
                layers.append(Cell(genotype, c))
        self.cells = nn.Sequential(*layers)
        self.lastact = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(c, classes)

    def forward(self, x):
        x = self.lastact(self.cells(self.stem(x)))
        return self.classifier(x.mean(dim=(2, 3)))
