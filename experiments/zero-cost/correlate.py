"""experiments/zero-cost/correlate.py LIST.csv TABLE.csv [COLUMN]

Rank correlation of every proxy column of `nas space CONF --list
--zero-cost ...` (LIST.csv: genotype,key,macs,params,<proxy>...) with a
NAS-Bench-201 table column (TABLE.csv: cellstr,...,COLUMN; default
cifar10-val), joined on the genotype string. Prints one Markdown row per
column: Spearman's rho (Pearson on average ranks) and Kendall's tau-b (ties
counted as in Kendall 1945), both implemented here with numpy. Run with
/usr/bin/python3.
"""
import csv
import sys

import numpy as np


def ranks(x):
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x))
    xs = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and xs[j + 1] == xs[i]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def kendall(a, b):
    n = len(a)
    conc = 0.0
    ta = tb = 0.0
    for i in range(n - 1):
        da = np.sign(a[i + 1:] - a[i])
        db = np.sign(b[i + 1:] - b[i])
        conc += float(np.sum(da * db))
        ta += float(np.sum(da != 0))
        tb += float(np.sum(db != 0))
    return conc / np.sqrt(ta * tb)


def main(argv):
    table = {}
    col = argv[2] if len(argv) > 2 else "cifar10-val"
    with open(argv[1]) as f:
        for row in csv.DictReader(f):
            table[row["cellstr"]] = float(row[col])
    with open(argv[0]) as f:
        rows = list(csv.DictReader(f))
    names = [k for k in rows[0].keys() if k not in ("genotype", "key")]
    names = list(dict.fromkeys(names))
    acc = np.array([table[r["genotype"]] for r in rows])
    print("%d cells joined with %s (%s)" % (len(rows), argv[1], col))
    print("| proxy | Spearman | Kendall tau |")
    print("|---|---|---|")
    for n in names:
        v = np.array([float(r[n]) if r[n] != "" else np.nan for r in rows])
        ok = np.isfinite(v)
        print("| %s | %.3f | %.3f |%s" % (n, spearman(v[ok], acc[ok]), kendall(v[ok], acc[ok]),
                                         "" if ok.all() else " (%d cells without a score)"
                                         % int((~ok).sum())))


if __name__ == "__main__":
    main(sys.argv[1:])
