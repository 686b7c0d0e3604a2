#!/usr/bin/python3
"""experiments/example-curves/analyse.py TRIALS.CSV OUTDIR - issue 30 item 6
(run.sh describes the protocol): best-so-far validation accuracy after each
trial of examples/fashion-cells.conf's search, evolution against random
search at equal trials, under the old and the new proxy defaults.

Writes OUTDIR/table.md (best-so-far at trials 10, 20 and 30: the mean over
seeds for evolution, the median over seeds for random search, with the
seeds counted; every seed's final best) and OUTDIR/curves.svg (those two
statistics at every trial, per default), and prints the table. Only runs
that finished all 30 trials count (a cut run is listed, not averaged, so
that every point of a curve has the same seeds). Standard library only.
"""
import csv
import math
import statistics
import sys
from collections import defaultdict

DEFAULTS = ("old", "new")
LABEL = {"old": "old defaults (valid 2000, no recalibration)",
         "new": "new defaults (valid 5000, bn_recalibrate 10)"}
MARKS = (10, 20, 30)
TRIALS = 30
POPULATION = 8  # the example's search.population: evolution's random start
LATER = defaultdict(list)  # config -> val_accuracy of trials 9..30 of finished runs


def curves(path):
    """{config: {seed: [best-so-far after trial 1, 2, ...]}} of the finished
    runs, and {config: {seed: trials}} of the cut ones"""
    rows = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            v = float(r["val_accuracy"]) if r["val_accuracy"] else None
            rows[(r["config"], int(r["seed"]))].append((int(r["trial"]), v))
    out, cut = defaultdict(dict), defaultdict(dict)
    for (config, seed), trials in rows.items():
        if len(trials) < TRIALS:
            cut[config][seed] = len(trials)
            continue
        best, c = -math.inf, []
        for _, v in sorted(trials):
            if v is not None and v > best:
                best = v
            c.append(best if math.isfinite(best) else math.nan)
        out[config][seed] = c
        LATER[config].extend(v for t, v in trials if t > POPULATION and v is not None)
    return out, cut


def stat_at(runs, t, how):
    """how ('mean' or 'median') of the seeds' best-so-far after trial t, and n."""
    vals = [c[t - 1] for c in runs.values() if len(c) >= t and not math.isnan(c[t - 1])]
    if not vals:
        return math.nan, 0
    return (statistics.fmean(vals) if how == "mean" else statistics.median(vals)), len(vals)


def fmt(v, n):
    return "-" if n == 0 else f"{v:.4f} ({n})"


def main():
    data, cut = curves(sys.argv[1])
    out = sys.argv[2]
    lines = ["# Best-so-far of examples/fashion-cells.conf: evolution vs random search (issue 30)", "",
             "Validation accuracy of the best trial so far after 10, 20 and 30 trials: the mean over",
             "seeds for evolution, the median over seeds for random search; (n) = seeds (runs that",
             "finished their 30 trials). Old and new score on different validation splits (2,000 vs 5,000 images,",
             "drawn by the seed), so compare evolution with random within a default, not across.", "",
             "| defaults | strategy | statistic | " + " | ".join(f"trial {t}" for t in MARKS) + " |",
             "|---|---|---|" + "---|" * len(MARKS)]
    for d in DEFAULTS:
        for strat, how in (("evolution", "mean"), ("random", "median")):
            runs = data.get(f"{d}-{strat}", {})
            cells = [fmt(*stat_at(runs, t, how)) for t in MARKS]
            lines.append(f"| {d} | {strat} | {how} | " + " | ".join(cells) + " |")
    lines += ["", "Where the strategies differ (trials 9-30; trials 1-8 are the same random samples for",
              "both with the same seed): the median validation accuracy of those trials, pooled over",
              "the finished runs (n trials):", ""]
    for d in DEFAULTS:
        cells = []
        for strat in ("evolution", "random"):
            v = LATER.get(f"{d}-{strat}", [])
            cells.append(f"{strat} {statistics.median(v):.4f} ({len(v)})" if v else f"{strat} -")
        lines.append(f"- {d}: " + ", ".join(cells))
    lines += ["", "Every finished run's best after 30 trials:", ""]
    for d in DEFAULTS:
        for strat in ("evolution", "random"):
            runs = data.get(f"{d}-{strat}", {})
            per = ", ".join(f"seed {s}: {c[-1]:.4f}" for s, c in sorted(runs.items()))
            short = ", ".join(f"seed {s} ({n} trials)" for s, n in sorted(cut[f"{d}-{strat}"].items()))
            lines.append(f"- {d}-{strat}: {per or 'no finished run'}" + (f"; cut, not counted: {short}" if short else ""))
    text = "\n".join(lines) + "\n"
    with open(out + "/table.md", "w") as f:
        f.write(text)
    sys.stdout.write(text)
    write_svg(out + "/curves.svg", data)


def write_svg(path, data):
    """Two panels (old, new): evolution's mean and random's median best-so-far."""
    pw, ph, pad, gap = 380, 300, 50, 30
    w, h = 2 * pw + gap + 2 * pad, ph + 2 * pad + 30
    series = {}
    for d in DEFAULTS:
        for strat, how in (("evolution", "mean"), ("random", "median")):
            runs = data.get(f"{d}-{strat}", {})
            series[(d, strat)] = [stat_at(runs, t, how)[0] for t in range(1, 31)]
    vals = [v for s in series.values() for v in s if not math.isnan(v)]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    lo, hi = math.floor(lo * 100) / 100, math.ceil(hi * 100) / 100
    if hi <= lo:
        hi = lo + 0.01
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="11"><rect width="{w}" height="{h}" fill="white"/>']
    colour = {"evolution": "#d62728", "random": "#1f77b4"}
    for i, d in enumerate(DEFAULTS):
        x0, y0 = pad + i * (pw + gap), pad

        def px(t, x0=x0):
            return x0 + (t - 1) / 29 * pw

        def py(v, y0=y0):
            return y0 + ph - (v - lo) / (hi - lo) * ph
        svg.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        svg.append(f'<text x="{x0 + pw / 2}" y="{y0 - 8}" text-anchor="middle">{LABEL[d]}</text>')
        for k in range(6):
            v = lo + (hi - lo) * k / 5
            svg.append(f'<text x="{x0 - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>')
        for t in (1, 10, 20, 30):
            svg.append(f'<text x="{px(t):.1f}" y="{y0 + ph + 14}" text-anchor="middle">{t}</text>')
        svg.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 28}" text-anchor="middle">trials</text>')
        for strat in ("evolution", "random"):
            pts = [(px(t), py(v)) for t, v in enumerate(series[(d, strat)], 1) if not math.isnan(v)]
            if pts:
                p = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
                svg.append(f'<polyline points="{p}" fill="none" stroke="{colour[strat]}" stroke-width="2"/>')
    lx = pad
    for strat, how in (("evolution", "mean over seeds"), ("random", "median over seeds")):
        svg.append(f'<line x1="{lx}" y1="{h - 12}" x2="{lx + 20}" y2="{h - 12}" stroke="{colour[strat]}" '
                   f'stroke-width="2"/><text x="{lx + 24}" y="{h - 8}">{strat} ({how})</text>')
        lx += 220
    svg.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
