"""experiments/zero-cost/fashion.py - helpers of fashion.sh (run with /usr/bin/python3).

  cells TRIALS.csv LIST.csv      the new-random trials of example-curves merged
                                 by canonical key (LIST.csv: `nas space --list`)
  chunks CELLS.csv N PREFIX      the cells' genotypes, N a file (PREFIX.0, .1, ...)
  table CELLS.csv DB LOGDIR SCORES.csv PROXY...
                                 Spearman and Kendall's tau-b of each proxy's
                                 score with the mean trained val_accuracy, its
                                 seconds per cell, against training's
"""
import csv
import os
import re
import sqlite3
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from correlate import kendall, spearman  # noqa: E402

CONFIG = "new-random"


def cells(trials, listing):
    key = {r["genotype"]: r["key"] for r in csv.DictReader(open(listing))}
    by_key = {}
    for r in csv.DictReader(open(trials)):
        if r["config"] != CONFIG or r["val_accuracy"] == "":
            continue
        k = key[r["genotype"]]
        by_key.setdefault(k, []).append((r["genotype"], float(r["val_accuracy"])))
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["genotype", "key", "trials", "val_accuracy"])
    for k, rows in by_key.items():
        w.writerow([rows[0][0], k, len(rows), "%.6f" % statistics.mean(a for _, a in rows)])


def chunks(cells_csv, n, prefix):
    g = [r["genotype"] for r in csv.DictReader(open(cells_csv))]
    for i in range(0, len(g), n):
        with open("%s.%d" % (prefix, i // n), "w") as f:
            f.write("\n".join(g[i:i + n]) + "\n")


def train_seconds(logdir):
    """Worker-seconds per trained trial of each new-random run: wall x 2 workers / trials."""
    out = []
    for name in sorted(os.listdir(logdir)):
        if not (name.startswith(CONFIG + "-") and name.endswith(".log")):
            continue
        m = re.search(r"this run: (\d+) trials in (?:(\d+)m)?(\d+)s", open(os.path.join(logdir, name)).read())
        if m:
            wall = int(m.group(2) or 0) * 60 + int(m.group(3))
            out.append(wall * 2.0 / int(m.group(1)))
    return out


def table(cells_csv, db, logdir, scores_csv, proxies):
    cl = list(csv.DictReader(open(cells_csv)))
    con = sqlite3.connect(db)
    score, secs, failed = {}, {}, {}
    for p in proxies:
        # r.score, not r.val_accuracy: the store writes a negative
        # val_accuracy as NULL, and jacob_cov's scores are all negative
        rows = con.execute(
            "SELECT t.arch_key, t.status, r.score,"
            " (julianday(t.finished_at) - julianday(t.started_at)) * 86400"
            " FROM trial t JOIN experiment e ON e.id = t.experiment_id"
            " LEFT JOIN result r ON r.trial_id = t.id WHERE e.name LIKE ?",
            ("fashion-%s-%%" % p,)).fetchall()
        score[p] = {k: v for k, s, v, _ in rows if s == "done" and v is not None}
        failed[p] = sum(1 for _, s, _, _ in rows if s == "failed")
        secs[p] = statistics.mean(t for *_, t in rows if t is not None)
    with open(scores_csv, "w") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["genotype", "key", "val_accuracy"] + proxies)
        for c in cl:
            w.writerow([c["genotype"], c["key"], c["val_accuracy"]] +
                       [repr(score[p][c["key"]]) if c["key"] in score[p] else "" for p in proxies])
    ts = train_seconds(logdir)
    tr = con.execute(
        "SELECT (julianday(t.finished_at) - julianday(t.started_at)) * 86400, r.train_seconds"
        " FROM trial t JOIN experiment e ON e.id = t.experiment_id"
        " JOIN result r ON r.trial_id = t.id WHERE e.name = 'fashion-train' AND t.status = 'done'"
    ).fetchall()
    tmed = statistics.mean(w for w, _ in tr)
    print("%d cells (%d trials of %s seeds 1-3, merged by canonical key). Training, same clock: "
          "%d of the cells trained again take %.1f s per trial (%.1f s of it train_seconds); "
          "the example-curves runs took %s worker-seconds per trial (wall x 2 workers / 30)."
          % (len(cl), sum(int(c["trials"]) for c in cl), CONFIG, len(tr), tmed,
             statistics.mean(t for _, t in tr), ", ".join("%.1f" % t for t in ts)))
    print()
    print("| proxy | cells scored | Spearman | Kendall tau | s per cell | cost / training a cell |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for p in proxies:
        have = [c for c in cl if c["key"] in score[p]]
        a = np.array([float(c["val_accuracy"]) for c in have])
        s = np.array([score[p][c["key"]] for c in have])
        note = " (%d failed)" % failed[p] if failed[p] else ""
        print("| %s | %d%s | %.3f | %.3f | %.3f | %.4f |"
              % (p, len(have), note, spearman(s, a), kendall(s, a), secs[p], secs[p] / tmed))


def main(argv):
    if argv[0] == "cells":
        cells(argv[1], argv[2])
    elif argv[0] == "chunks":
        chunks(argv[1], int(argv[2]), argv[3])
    elif argv[0] == "table":
        table(argv[1], argv[2], argv[3], argv[4], argv[5:])
    else:
        sys.exit("usage: fashion.py cells|chunks|table ...")


if __name__ == "__main__":
    main(sys.argv[1:])
