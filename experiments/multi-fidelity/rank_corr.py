#!/usr/bin/python3
"""experiments/multi-fidelity/rank_corr.py DBDIR - how well a low rung ranks
the trials at a higher one (issue 17): Spearman's rank correlation between
the validation accuracies of the trials that reached both rungs, over the
multi-fidelity runs' databases in DBDIR (run.sh's results/db; full-* runs
have no rungs). Prints one line per pair of rungs:
    rungs 1 -> 9: 178 trials, spearman 0.03
Ties get the order of their values' first appearance (no averaging).
Standard library only."""
import glob
import sqlite3
import sys


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0] * len(xs)
    for k, i in enumerate(order):
        r[i] = k
    return r


def spearman(a, b):
    n = len(a)
    if n < 2:
        return float("nan")
    d = sum((x - y) ** 2 for x, y in zip(ranks(a), ranks(b)))
    return 1 - 6 * d / (n * (n * n - 1))


def main():
    dbs = [f for f in sorted(glob.glob(sys.argv[1] + "/*.db"))
           if not f.split("/")[-1].startswith("full-")]
    pairs = {}
    for f in dbs:
        con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
        fids = [r[0] for r in con.execute("SELECT DISTINCT fidelity FROM rung ORDER BY 1")]
        for i, lo in enumerate(fids):
            for hi in fids[i + 1:]:
                rows = con.execute("SELECT a.val_accuracy, b.val_accuracy FROM rung a JOIN rung b "
                                   "ON a.trial_id = b.trial_id AND a.fidelity = ? AND "
                                   "b.fidelity = ?", (lo, hi)).fetchall()
                pairs.setdefault((lo, hi), []).extend(rows)
        con.close()
    for (lo, hi), rows in sorted(pairs.items()):
        a, b = [r[0] for r in rows], [r[1] for r in rows]
        print(f"rungs {lo} -> {hi}: {len(rows)} trials, spearman {spearman(a, b):.2f}")


if __name__ == "__main__":
    main()
