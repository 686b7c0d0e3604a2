#!/usr/bin/python3
"""Rebuild chain-space genotypes in PyTorch and compare MACs and params.

Independent of nas's C code: the networks are built here from the layer
order written in docs/spaces.md ("Layer order") and from the parsed space
that `nas space CONF --format json` prints (the keys of space.conf, not
nas's layers). MACs are counted with forward hooks on nn.Conv2d and
nn.Linear (out elements x in_channels/groups x kernel area; in x out for
linear; no bias), params as sum(p.numel() for p in model.parameters()).

usage: chain_torch.py SPACE.json   (exit 0: all equal, 1: a mismatch)
"""
import json
import sys

import torch
import torch.nn as nn


def act(name):
    return {"relu": nn.ReLU(), "relu6": nn.ReLU6(), "hswish": nn.Hardswish()}[name]


def make_div8(v):
    n = max(8, int(v + 4) // 8 * 8)
    if n < 0.9 * v:
        n += 8
    return n


class SE(nn.Module):
    def __init__(self, c, gate):
        super().__init__()
        mid = make_div8(c // 4)
        self.reduce = nn.Conv2d(c, mid, 1, bias=True)
        self.relu = nn.ReLU()
        self.expand = nn.Conv2d(mid, c, 1, bias=True)
        self.gate = nn.Hardsigmoid() if gate == "hsigmoid" else nn.Sigmoid()

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * self.gate(self.expand(self.relu(self.reduce(s))))


class MB(nn.Module):
    def __init__(self, cin, cout, e, k, stride, se, a, gate):
        super().__init__()
        layers = []
        mid = cin * e
        if e != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act(a)]
        layers += [nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
                   nn.BatchNorm2d(mid), act(a)]
        if se:
            layers.append(SE(mid, gate))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.res else y


def build(space, genotype):
    stem = space["stem"]
    cin = space["input"][0]
    mods = [nn.Conv2d(cin, stem["channels"], stem["kernel"], stem["stride"], stem["kernel"] // 2,
                      bias=False), nn.BatchNorm2d(stem["channels"]), act(stem["activation"])]
    c = stem["channels"]
    parts = genotype.split("|")
    assert len(parts) == len(space["stages"]), genotype
    for st, part in zip(space["stages"], parts):
        toks = part.split(":")
        i = 0
        w = st["channels"][0]
        if st["channels_choice"]:
            w = int(toks[i][1:]); i += 1
        depth = st["layers"]
        if st["depth"]:
            depth = int(toks[i][1:]); i += 1
        se = st["se"] == "on"
        if st["se"] == "choice":
            se = toks[i] == "se_on"; i += 1
        ops = toks[i:]
        assert len(ops) == st["layers"], (genotype, part)
        for li in range(depth):
            op = ops[li]
            stride = st["stride"] if li == 0 else 1
            same = stride == 1 and c == w
            if op == "zero" or (op == "skip" and same):
                continue
            if op == "skip":
                mods += [nn.Conv2d(c, w, 1, stride, 0, bias=False), nn.BatchNorm2d(w)]
            elif op.startswith("conv_k"):
                k = int(op[6:])
                mods += [nn.Conv2d(c, w, k, stride, k // 2, bias=False), nn.BatchNorm2d(w),
                         act(st["activation"])]
            else:
                e, k = op[2:].split("_k")
                mods.append(MB(c, w, int(e), int(k), stride, se, st["activation"], space["se_gate"]))
            c = w
    head = space["head"]
    if head["channels"]:
        mods += [nn.Conv2d(c, head["channels"], 1, bias=False), nn.BatchNorm2d(head["channels"]),
                 act(head["activation"])]
        c = head["channels"]
    mods.append(nn.AdaptiveAvgPool2d(1))
    if head["mix"]:
        mods += [nn.Conv2d(c, head["mix"], 1, bias=False), act(head["activation"])]
        c = head["mix"]
    mods.append(nn.Flatten())
    if head["dropout"] > 0:
        mods.append(nn.Dropout(head["dropout"]))
    mods.append(nn.Linear(c, space["classes"]))
    return nn.Sequential(*mods)


def count(model, shape):
    macs = [0]

    def hook(m, inp, out):
        if isinstance(m, nn.Conv2d):
            k = m.kernel_size[0] * m.kernel_size[1]
            macs[0] += out.numel() * (m.in_channels // m.groups) * k
        elif isinstance(m, nn.Linear):
            macs[0] += m.in_features * m.out_features

    hs = [m.register_forward_hook(hook) for m in model.modules()
          if isinstance(m, (nn.Conv2d, nn.Linear))]
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, *shape))
    for h in hs:
        h.remove()
    return macs[0], sum(p.numel() for p in model.parameters())


def main():
    doc = json.load(open(sys.argv[1]))
    space = doc["space"]
    bad = 0
    for s in doc["samples"]:
        m, p = count(build(space, s["genotype"]), space["input"])
        ok = m == s["macs"] and p == s["params"]
        bad += not ok
        print("%s macs %d/%d params %d/%d  %s" % ("ok  " if ok else "DIFF", s["macs"], m, s["params"],
                                                 p, s["genotype"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
