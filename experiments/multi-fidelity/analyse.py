#!/usr/bin/python3
"""experiments/multi-fidelity/analyse.py RUNS.CSV SECONDS OUTDIR - the study's
figures (issue 17; run.sh describes the protocol): best-so-far at full
fidelity per method and seed, the wall-clock each method needs to reach Q
(the median final best of full-fidelity evolution), curves.svg, summary.md
and the machine-readable last line
    speedup_to_quality=X best_mf=A best_full=B
Standard library only (no numpy or matplotlib on the study machines)."""
import csv
import math
import sys
from collections import defaultdict

FULL = "full-evolution"
MF = ("hb-evolution", "hb-nao", "asha-random")
METHODS = (FULL, "full-random") + MF


def lower_median(xs):
    s = sorted(xs)
    return s[(len(s) - 1) // 2] if s else math.nan


def main():
    runs_csv, secs, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    pts = defaultdict(list)  # (method, seed) -> [(seconds, val)]
    seeds = defaultdict(set)
    with open(runs_csv) as f:
        for row in csv.DictReader(f):
            pts[(row["method"], row["seed"])].append((float(row["seconds"]), float(row["best"])))
    for (m, s) in pts:
        seeds[m].add(s)
    all_seeds = sorted({s for (_, s) in pts} | {s for m in seeds for s in seeds[m]})

    def curve(m, s):  # best-so-far steps, within the budget
        best, steps = -math.inf, []
        for t, v in sorted(pts.get((m, s), [])):
            if t <= secs and v > best:
                best = v
                steps.append((t, v))
        return steps

    def final(m, s):
        c = curve(m, s)
        return c[-1][1] if c else math.nan

    def time_to(m, s, q):
        for t, v in curve(m, s):
            if v >= q:
                return t
        return math.inf

    finals = {m: [final(m, s) for s in all_seeds] for m in METHODS}
    q = lower_median([v for v in finals[FULL] if not math.isnan(v)])
    ttq = {m: lower_median([time_to(m, s, q) for s in all_seeds]) for m in METHODS}
    mean = {m: (sum(v for v in finals[m] if not math.isnan(v)) /
                max(1, sum(1 for v in finals[m] if not math.isnan(v)))) for m in METHODS}
    best_mf = min(MF, key=lambda m: (ttq[m], -mean[m]))
    x = ttq[FULL] / ttq[best_mf] if math.isfinite(ttq[best_mf]) and math.isfinite(ttq[FULL]) and ttq[best_mf] > 0 else 0.0

    write_svg(out + "/curves.svg", {m: [curve(m, s) for s in all_seeds] for m in METHODS}, secs, q)
    with open(out + "/summary.md", "w") as f:
        f.write("# Multi-fidelity study (issue 17)\n\n")
        f.write(f"{len(all_seeds)} seeds, {secs:.0f} s of wall-clock per run; Q = {q:.4f} "
                f"(median final best of {FULL})\n\n")
        f.write("| method | mean final best | median time to Q (s) |\n|---|---|---|\n")
        for m in METHODS:
            t = f"{ttq[m]:.1f}" if math.isfinite(ttq[m]) else "not reached"
            f.write(f"| {m} | {mean[m]:.4f} | {t} |\n")
        f.write(f"\nbest multi-fidelity method: {best_mf}; speedup to quality {x:.2f}\n")
    with open(out + "/summary.md") as f:
        sys.stdout.write(f.read())
    print(f"speedup_to_quality={x:.2f} best_mf={mean[best_mf]:.4f} best_full={mean[FULL]:.4f}")


def write_svg(path, curves, secs, q):
    """Median best-so-far (over seeds) against seconds, one line per method."""
    w, h, pad = 720, 420, 50
    grid = [secs * i / 100 for i in range(101)]
    colours = ["#000000", "#888888", "#d62728", "#1f77b4", "#2ca02c"]
    lines, lo, hi = {}, 1.0, 0.0
    for m, per_seed in curves.items():
        ys = []
        for t in grid:
            vals = []
            for c in per_seed:
                v = [val for (tt, val) in c if tt <= t]
                vals.append(v[-1] if v else math.nan)
            ok = sorted(v for v in vals if not math.isnan(v))
            ys.append(ok[(len(ok) - 1) // 2] if len(ok) * 2 >= len(vals) and ok else math.nan)
        lines[m] = ys
        for y in ys:
            if not math.isnan(y):
                lo, hi = min(lo, y), max(hi, y)
    if hi <= lo:
        lo, hi = 0.0, 1.0
    sx = lambda t: pad + (w - 2 * pad) * t / secs
    sy = lambda v: h - pad - (h - 2 * pad) * (v - lo) / (hi - lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w/2}" y="20" text-anchor="middle">median best-so-far val accuracy at full '
           f'fidelity (Q = {q:.4f} dashed)</text>',
           f'<line x1="{pad}" y1="{h-pad}" x2="{w-pad}" y2="{h-pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h-pad}" stroke="black"/>',
           f'<text x="{w/2}" y="{h-10}" text-anchor="middle">wall-clock (s), 0 .. {secs:.0f}</text>',
           f'<text x="5" y="{pad-8}">{hi:.3f}</text><text x="5" y="{h-pad}">{lo:.3f}</text>']
    if lo <= q <= hi:
        out.append(f'<line x1="{pad}" y1="{sy(q):.1f}" x2="{w-pad}" y2="{sy(q):.1f}" '
                   f'stroke="black" stroke-dasharray="4"/>')
    for i, (m, ys) in enumerate(lines.items()):
        p = " ".join(f"{sx(t):.1f},{sy(y):.1f}" for t, y in zip(grid, ys) if not math.isnan(y))
        if p:
            out.append(f'<polyline fill="none" stroke="{colours[i % 5]}" stroke-width="2" points="{p}"/>')
        out.append(f'<text x="{w-pad-150}" y="{pad+18*i+10}" fill="{colours[i % 5]}">{m}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
