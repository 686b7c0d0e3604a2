#!/usr/bin/python3
"""experiments/bench-train/bench_torch.py - the PyTorch yardstick for issue 8.

Builds NAS-Bench-201's TinyNetwork (Dong & Yang, ICLR 2020; layer table in
../shared/reference/nb201-tinynetwork-fmnist.md; the definition is in
../common/nb201_torch.py) from a genotype string and
measures, on Fashion-MNIST read from the idx.gz files with gzip + numpy:
training images/s (SGD Nesterov 0.9, weight decay 5e-4, cosine lr per step),
evaluation images/s (eval mode, no_grad) and batch-1 latency (median ms).
With --epochs E it also trains E epochs on the full training set and prints
the test accuracy. Output: `key=value` lines that run.sh parses.

Chain networks (issue 15): with --space-json SPACE.json (`nas space CONF
--format json`) the genotype is a chain genotype and the network is built
by tests/e2e/chain_torch.py's build() - idiomatic PyTorch MBConv / SE
modules written from docs/spaces.md, independently of nas's C code.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

# TinyNetwork, parse_genotype and the Fashion-MNIST reader, shared with bench-gpu
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from nb201_torch import TinyNetwork, load_split, parse_genotype  # noqa: E402


def make_opt(model, lr, total_steps):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(total_steps, 1))
    return opt, sched


def train_steps(model, opt, sched, xs, ys, batch, steps, gen, lossf):
    """`steps` SGD steps on random batches gathered from xs/ys."""
    model.train()
    n = xs.shape[0]
    perm = torch.randperm(n, generator=gen)
    pos = 0
    correct = 0
    loss_sum = 0.0
    seen = 0
    for _ in range(steps):
        if pos + batch > n:
            perm = torch.randperm(n, generator=gen)
            pos = 0
        idx = perm[pos:pos + batch]
        pos += batch
        xb, yb = xs.index_select(0, idx), ys.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        out = model(xb)
        loss = lossf(out, yb)
        loss.backward()
        opt.step()
        sched.step()
        loss_sum += float(loss) * batch
        correct += int((out.argmax(1) == yb).sum())
        seen += batch
    return loss_sum / max(seen, 1), correct / max(seen, 1)


def evaluate(model, xs, ys, batch):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, xs.shape[0], batch):
            out = model(xs[i:i + batch])
            correct += int((out.argmax(1) == ys[i:i + batch]).sum())
    return correct / xs.shape[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--genotype", required=True)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--eval-images", type=int, default=5000)
    ap.add_argument("--latency-runs", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=0)
    ap.add_argument("--train-subset", type=int, default=0,
                    help="--epochs trains on the first N training images (0: all 60k)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--space-json", default="",
                    help="chain space (nas space CONF --format json): genotype is a chain one")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    xs, ys = load_split(a.data, "train")
    xt, yt = load_split(a.data, "test")
    if a.space_json:
        import json
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "tests", "e2e"))
        from chain_torch import build  # noqa: E402
        space = json.load(open(a.space_json))["space"]

        def make_model(g):
            return build(space, g)
        geno = a.genotype
    else:
        def make_model(g):
            return TinyNetwork(g)
        geno = parse_genotype(a.genotype)
    lossf = nn.CrossEntropyLoss()

    # throughput: warm-up steps, then `steps` timed steps
    model = make_model(geno)
    opt, sched = make_opt(model, a.lr, a.steps + 5)
    train_steps(model, opt, sched, xs, ys, a.batch, 5, gen, lossf)
    t0, c0 = time.perf_counter(), time.process_time()
    train_steps(model, opt, sched, xs, ys, a.batch, a.steps, gen, lossf)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print("torch_train_ips=%.1f" % (a.steps * a.batch / dt))
    # CPU seconds of all threads: comparable across runs on a busy machine
    print("torch_train_cpu_ms_per_img=%.3f" % (1e3 * dc / (a.steps * a.batch)))

    ne = min(a.eval_images, xt.shape[0])
    evaluate(model, xt[:a.batch * 2], yt[:a.batch * 2], a.batch)
    t0, c0 = time.perf_counter(), time.process_time()
    evaluate(model, xt[:ne], yt[:ne], a.batch)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print("torch_eval_ips=%.1f" % (ne / dt))
    print("torch_eval_cpu_ms_per_img=%.3f" % (1e3 * dc / ne))

    model.eval()
    x1 = xt[:1].clone()
    times = []
    with torch.no_grad():
        for _ in range(20):
            model(x1)
        for _ in range(a.latency_runs):
            t0 = time.perf_counter()
            model(x1)
            times.append((time.perf_counter() - t0) * 1e3)
    print("torch_latency_ms=%.3f" % statistics.median(times))

    if a.epochs > 0:
        if a.train_subset > 0:
            xs, ys = xs[:a.train_subset], ys[:a.train_subset]
        torch.manual_seed(a.seed)
        model = make_model(geno)
        per_epoch = math.ceil(xs.shape[0] / a.batch)
        opt, sched = make_opt(model, a.lr, per_epoch * a.epochs)
        t0 = time.perf_counter()
        for ep in range(a.epochs):
            # one epoch = a full pass over a fresh permutation; the last batch is short
            model.train()
            perm = torch.randperm(xs.shape[0], generator=gen)
            for i in range(0, xs.shape[0], a.batch):
                idx = perm[i:i + a.batch]
                opt.zero_grad(set_to_none=True)
                loss = lossf(model(xs.index_select(0, idx)), ys.index_select(0, idx))
                loss.backward()
                opt.step()
                sched.step()
            print("torch_epoch=%d loss=%.4f elapsed_s=%.1f" % (ep + 1, float(loss),
                                                               time.perf_counter() - t0),
                  flush=True)
        print("torch_acc=%.4f" % evaluate(model, xt, yt, a.batch))


if __name__ == "__main__":
    main()
