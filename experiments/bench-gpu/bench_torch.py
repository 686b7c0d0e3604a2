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
/work/shared/reference/nb201-tinynetwork-fmnist.md; the definition is in
../common/nb201_torch.py.
"""
import argparse
import contextlib
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

# TinyNetwork, parse_genotype and the Fashion-MNIST reader, shared with bench-train
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from nb201_torch import TinyNetwork, load_split, parse_genotype  # noqa: E402


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

    x, y = load_split(a.data, "train", a.train_images)  # normalised as nas does
    x, y = x.to(dev), y.to(dev)
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
