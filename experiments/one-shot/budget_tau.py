#!/usr/bin/python3
"""experiments/one-shot/budget_tau.py REF1 REF3 SUPERNET.tsv... - the rank
agreement table of budget.sh (issue 32): Kendall's tau-b between each
supernet TSV's accuracies (`nas supernet --out`, column 2) and the mean of
the stand-alone seeds in REF1 and in REF3 (`nas supernet --seeds 2 --out`:
columns 3 and 4), matched by genotype (column 1); the seed-to-seed tau of
each reference; the tau between the two references' means; and the tau a
perfect ranker would reach against a 2-seed mean given a reference's
seed_tau, under the model of docs/one-shot.md (architecture effect and
seed noise Gaussian: r_seed = sin(pi/2 seed_tau), r = sqrt(2 r_seed /
(1 + r_seed)), tau = 2/pi asin r; Kendall 1938 / Greiner's relation).
Standard library only."""
import math
import os
import sys


def tau_b(x, y):
    """Kendall's tau-b of two equal-length lists (ties counted per list)."""
    conc = disc = tie_x = tie_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            a = (x[i] > x[j]) - (x[i] < x[j])
            b = (y[i] > y[j]) - (y[i] < y[j])
            if a == 0 and b == 0:
                continue
            if a == 0:
                tie_x += 1
            elif b == 0:
                tie_y += 1
            elif a == b:
                conc += 1
            else:
                disc += 1
    den = math.sqrt((conc + disc + tie_x) * (conc + disc + tie_y))
    return (conc - disc) / den if den > 0 else float("nan")


def load(path):
    """genotype -> list of the accuracy columns after it."""
    rows = {}
    with open(path) as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 2:
                rows[cols[0]] = [float(v) for v in cols[1:]]
    return rows


def perfect_tau(seed_tau):
    r_seed = max(0.0, math.sin(math.pi / 2 * seed_tau))
    return 2 / math.pi * math.asin(math.sqrt(2 * r_seed / (1 + r_seed)))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    refs = [load(sys.argv[1]), load(sys.argv[2])]
    keys = [k for k in refs[0] if k in refs[1]]
    means = [[(r[k][1] + r[k][2]) / 2 for k in keys] for r in refs]
    for name, r in zip(("proxy 1 epoch", "proxy 3 epochs"), refs):
        st = tau_b([r[k][1] for k in keys], [r[k][2] for k in keys])
        print(f"{name}: seed_tau {st:.3f}, a perfect ranker ~{perfect_tau(st):.2f} "
              f"against its 2-seed mean ({len(keys)} genotypes)")
    print(f"tau between the two proxies' means: {tau_b(means[0], means[1]):.3f}")
    print("supernet\ttau vs 1-epoch mean\ttau vs 3-epoch mean")
    for path in sys.argv[3:]:
        s = load(path)
        ks = [i for i, k in enumerate(keys) if k in s]
        if len(ks) < 2:
            print(f"{os.path.basename(path)}\t-\t-")
            continue
        x = [s[keys[i]][0] for i in ks]
        t = [tau_b(x, [m[i] for i in ks]) for m in means]
        print(f"{os.path.basename(path)}\t{t[0]:.3f}\t{t[1]:.3f}")


if __name__ == "__main__":
    main()
