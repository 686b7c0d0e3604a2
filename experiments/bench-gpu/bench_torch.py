#!/usr/bin/python3
"""PyTorch side of experiments/bench-gpu: train one NAS-Bench-201 cell
network (TinyNetwork: stem, 3 stages of N cells with residual reduction
blocks, BN-ReLU, global average pool, linear) on Fashion-MNIST with the
recipe `nas train` uses (SGD, Nesterov momentum 0.9, weight decay 5e-4,
cosine learning rate per step, batch 128) and print the training
throughput in the same line format as `nas train`:

    training: 12.3 s, 4878 img/s

fp32 by default (TF32 off, as the nas cuda backend); --precision bf16 or
fp16 runs the forward pass and loss under torch.autocast (fp32 master
weights; fp16 with a GradScaler's dynamic loss scaling), the counterpart
of `nas train --precision`. cudnn.benchmark on (nas also picks
convolution algorithms by measurement). Data are loaded to
the device once, so the figure is compute, not input pipeline.

Network after Dong & Yang, "NAS-Bench-201", ICLR 2020; layer table in
/work/shared/reference/nb201-tinynetwork-fmnist.md.
"""
import argparse
import contextlib
import gzip
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")


def parse_genotype(s):
    """'|op~0|+|op~0|op~1|+|op~0|op~1|op~2|' -> [[(op, src)], ...] per node."""
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


class ReLUConvBN(nn.Sequential):
    def __init__(self, cin, cout, k, stride, pad):
        super().__init__(nn.ReLU(inplace=False),
                         nn.Conv2d(cin, cout, k, stride, pad, bias=False),
                         nn.BatchNorm2d(cout))


class Zero(nn.Module):
    def forward(self, x):
        return x.mul(0.0)


def make_op(name, c):
    if name == "none":
        return Zero()
    if name == "skip_connect":
        return nn.Identity()
    if name == "nor_conv_1x1":
        return ReLUConvBN(c, c, 1, 1, 0)
    if name == "nor_conv_3x3":
        return ReLUConvBN(c, c, 3, 1, 1)
    return nn.AvgPool2d(3, 1, 1, count_include_pad=False)


class Cell(nn.Module):
    def __init__(self, genotype, c):
        super().__init__()
        self.genotype = genotype
        self.edges = nn.ModuleList(make_op(op, c) for node in genotype for op, _ in node)

    def forward(self, x):
        states = [x]
        k = 0
        for node in self.genotype:
            acc = None
            for _, src in node:
                y = self.edges[k](states[src])
                k += 1
                acc = y if acc is None else acc + y
            states.append(acc)
        return states[-1]


class Reduction(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv_a = ReLUConvBN(cin, cout, 3, 2, 1)
        self.conv_b = ReLUConvBN(cout, cout, 3, 1, 1)
        self.down = nn.Sequential(nn.AvgPool2d(2, 2, 0),
                                  nn.Conv2d(cin, cout, 1, 1, 0, bias=False))

    def forward(self, x):
        return self.conv_b(self.conv_a(x)) + self.down(x)


class TinyNetwork(nn.Module):
    def __init__(self, genotype, c=16, n=1, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))
        layers = []
        cin = c
        for stage in range(3):
            cout = c * (2 ** stage)
            if stage > 0:
                layers.append(Reduction(cin, cout))
            layers += [Cell(genotype, cout) for _ in range(n)]
            cin = cout
        self.cells = nn.Sequential(*layers)
        self.lastact = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.lastact(self.cells(self.stem(x)))
        return self.classifier(F.adaptive_avg_pool2d(x, 1).flatten(1))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    t = torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8)
    return t.reshape(dims)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--genotype", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--channels", type=int, default=16)
    ap.add_argument("--cells", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--train-images", type=int, default=0, help="0 = all 60000")
    ap.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                    help="autocast dtype (fp16 adds loss scaling); fp32 = no autocast")
    a = ap.parse_args()

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("bench_torch: no CUDA device visible to PyTorch", file=sys.stderr)
        return 3
    torch.manual_seed(a.seed)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device(a.device)

    x = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz")).float().div_(255.0)
    y = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz")).long()
    if a.train_images:
        x, y = x[:a.train_images], y[:a.train_images]
    # Fashion-MNIST mean/std, as nas normalises
    x = x.sub_(0.2860).div_(0.3530).unsqueeze(1).to(dev)
    y = y.to(dev)
    n = x.shape[0]

    net = TinyNetwork(parse_genotype(a.genotype), a.channels, a.cells).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9, weight_decay=5e-4,
                          nesterov=True)
    steps_per_epoch = math.ceil(n / a.batch_size)
    total = steps_per_epoch * a.epochs
    g = torch.Generator(device="cpu").manual_seed(a.seed)
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[a.precision]
    # loss scaling for fp16 only (a disabled scaler passes everything through)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "fp16" and dev.type == "cuda")

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    sync()
    t0 = time.perf_counter()
    step = 0
    seen = 0
    net.train()
    for _ in range(a.epochs):
        perm = torch.randperm(n, generator=g).to(dev)
        for i in range(0, n, a.batch_size):
            idx = perm[i:i + a.batch_size]
            for group in opt.param_groups:
                group["lr"] = 0.5 * a.lr * (1.0 + math.cos(math.pi * step / total))
            with (torch.autocast(device_type=dev.type, dtype=amp_dtype) if amp_dtype
                  else contextlib.nullcontext()):
                loss = F.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            step += 1
            seen += idx.numel()
    sync()
    dt = time.perf_counter() - t0
    print("training: %.1f s, %.0f img/s" % (dt, seen / dt))
    print("final loss %.4f" % loss.item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
