#!/usr/bin/env bash
# tests/e2e/test_report.sh - `nas report` rendered in headless Chromium.
#
# Builds a results database without training: a table-evaluator search
# (30 trials of multi-objective evolution, accuracy/MACs, a MACs
# constraint) on a table generated here that lacks a fifth of the cells,
# so some trials fail with "not in table". When Fashion-MNIST is installed
# it adds a tiny real search (5 trials, accuracy/latency) for measured
# latencies. For each experiment: `nas report`, then Chromium (Debian
# package `chromium`, scripts/deps.sh test) loads the page from file://:
#   - no console message at all (errors, uncaught exceptions, failed loads;
#     the detector is first checked on a page with a deliberate error);
#   - the DOM after scripts ran (--dump-dom) has every plot by id, one
#     circle per done trial, the Pareto front circles equal to a brute-force
#     SQL front, the front path, a row per failed trial, and data-tip
#     attributes (the tooltip script ran);
#   - a screenshot shows the plots: enough distinct colours and pixels of
#     the point, front and best-so-far colours (PIL via /usr/bin/python3;
#     a file-size check without it).
# Skips (77) when /usr/bin/chromium or the sqlite3 shell is missing.
# NAS_REPORT_KEEP=DIR keeps the pages and screenshots in DIR.
. "$(dirname "$0")/search_lib.sh"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "headless Chromium not found at $CHROMIUM (scripts/deps.sh test installs chromium)"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY not found (needed to read the DOM)"
cd "$TMP" || fail "cd"
DB=$TMP/report.db

chrome() { # chrome OUT_LOG ARGS... (stdout goes to the caller)
    local log=$1
    shift
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$TMP/chrome.XXXXXX")" --enable-logging=stderr --v=0 \
        "$@" 2>"$log"
}

# console_clean LOG: no console message of the page.
console_clean() {
    ! grep -E ':CONSOLE|Uncaught' "$1"
}

note "the console detector sees a deliberate error"
printf '<!DOCTYPE html><html><body><script>notDefinedAnywhere();</script></body></html>' >bad.html
chrome bad.log --dump-dom "file://$TMP/bad.html" >/dev/null
grep -q 'Uncaught ReferenceError' bad.log || { cat bad.log; fail "Chromium did not report a console error"; }

note "a table search with failures (no training)"
awk 'BEGIN {
    split("none skip_connect nor_conv_1x1 nor_conv_3x3 avg_pool_3x3", op, " ");
    print "genotype,acc";
    for (i = 0; i < 15625; i++) {
        n = i; c3 = 0; c1 = 0;
        for (e = 0; e < 6; e++) { d[e] = n % 5 + 1; n = int(n / 5); c3 += d[e] == 4; c1 += d[e] == 3 }
        if ((i * 31 + 7) % 5 == 0) continue;   # a fifth of the cells is missing
        g = "|" op[d[0]] "~0|+|" op[d[1]] "~0|" op[d[2]] "~1|+|" op[d[3]] "~0|" op[d[4]] "~1|" op[d[5]] "~2|";
        printf "%s,%.2f\n", g, 60 + 4 * c3 + 2 * c1 + (i * 7919 % 13) / 2.0;
    }
}' >table.csv
cat >table.conf <<CONF
# e2e report: a table search <with> "special" & characters in a comment
experiment = "e2e-report-table";
seed = 7;
space: { channels = 4; cells_per_stage = 1; };
search: { strategy = "evolution"; trials = 30; population = 8; sample_size = 3; };
evaluator: { kind = "table"; table = "$TMP/table.csv"; column = "acc"; table_scale = 0.01; };
objectives = ({ metric = "val_accuracy"; goal = "max"; }, { metric = "macs"; goal = "min"; });
constraints: { mmacs = 0.9; };
workers: { count = 0; };
CONF
run 0 "$NAS" run table.conf --db "$DB" --quiet
EXPS="e2e-report-table"

note "a latency constraint on a table: accepted, not applied, and nas run says so"
sed 's/constraints: { mmacs = 0.9; };/constraints: { mmacs = 0.9; latency_ms = 1.0; };/' table.conf >table-lat.conf
run 0 "$NAS" run table-lat.conf --db "$TMP/lat.db"
grep_in "constraints.latency_ms = 1 is not applied" "$TMP/err"
# the report said "latency <= 1 ms" as if it had filtered trials by it
run 0 "$NAS" report --db "$TMP/lat.db" -o "$TMP/lat.html"
grep_in "latency &le; 1 ms (not applied: the table evaluator measures no latency)" "$TMP/lat.html"
expect_eq "the same trials as without it" \
    "$(sql "$TMP/lat.db" "SELECT group_concat(genotype || ' ' || coalesce(score, 'x'), ',') FROM (SELECT * FROM trial t LEFT JOIN result r ON r.trial_id = t.id ORDER BY t.id)")" \
    "$(sql "$DB" "SELECT group_concat(genotype || ' ' || coalesce(score, 'x'), ',') FROM (SELECT * FROM trial t LEFT JOIN result r ON r.trial_id = t.id ORDER BY t.id)")"

if [ -f "$FMNIST/train-images-idx3-ubyte.gz" ]; then
    note "a tiny real search (5 trials) for measured latencies"
    cat >small.conf <<CONF
experiment = "e2e-report-small";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "cpu"; threads = 1; };
search: { strategy = "evolution"; trials = 5; population = 3; sample_size = 2; };
objectives = ({ metric = "val_accuracy"; goal = "max"; }, { metric = "latency_ms"; goal = "min"; });
evaluator: { latency_runs = 3; latency_warmup = 1; };
workers: { count = 0; };
CONF
    run 0 "$NAS" run small.conf --db "$DB" --quiet
    EXPS="$EXPS e2e-report-small"
else
    echo "-- (Fashion-MNIST not installed: only the table search is reported)"
fi

note "usage errors"
run 2 "$NAS" report --db "$DB" --bogus
run 2 "$NAS" report --db "$DB" --top-k zero
run 1 "$NAS" report --db "$DB" --experiment no-such-experiment -o none.html
grep_in "no-such-experiment" "$TMP/err"
[ ! -e none.html ] && [ ! -e none.html.tmp ] || fail "a failed report left a file behind"

for exp in $EXPS; do
    note "report of $exp"
    run 0 "$NAS" report --db "$DB" --experiment "$exp" -o "$exp.html" --top-k 5
    grep_in "wrote $exp.html" "$TMP/out"
    eid=$(sql "$DB" "SELECT id FROM experiment WHERE name = '$exp'")
    # what the page must show, straight from SQL
    sql "$DB" "SELECT count(*) FROM trial WHERE experiment_id = $eid AND status = 'done'" >want_done
    sql "$DB" "SELECT count(*) FROM trial WHERE experiment_id = $eid AND status = 'failed'" >want_failed
    sql "$DB" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id
               WHERE t.experiment_id = $eid AND t.status = 'done' AND r.latency_ms > 0" >want_lat
    # brute-force front of (max val_accuracy, min macs) over feasible done trials
    sql "$DB" "SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id
               WHERE t.experiment_id = $eid AND t.status = 'done' AND r.score IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM trial t2 JOIN result r2 ON r2.trial_id = t2.id
                   WHERE t2.experiment_id = $eid AND t2.status = 'done' AND r2.score IS NOT NULL
                   AND r2.val_accuracy >= r.val_accuracy AND r2.macs <= r.macs
                   AND (r2.val_accuracy > r.val_accuracy OR r2.macs < r.macs))
               ORDER BY t.id" | paste -sd, >want_front
    [ -s want_front ] || fail "$exp: no feasible trial to draw a front of"

    # one launch: the DOM after scripts ran on stdout, and a screenshot
    chrome "$exp.log" --window-size=1100,2400 --hide-scrollbars --screenshot="$TMP/$exp.png" \
        --dump-dom "file://$TMP/$exp.html" >"$exp.dom.html" ||
        fail "$exp: Chromium failed (log: $(tail -3 "$exp.log"))"
    console_clean "$exp.log" || fail "$exp: console messages while loading the report"
    [ -s "$exp.dom.html" ] || fail "$exp: Chromium dumped no DOM"
    [ -s "$exp.png" ] || fail "$exp: no screenshot"

    "$PY" - "$exp.dom.html" "$(cat want_done)" "$(cat want_failed)" "$(cat want_lat)" \
        "$(cat want_front)" <<'PY' || fail "$exp: DOM check failed"
import sys
from html.parser import HTMLParser

path, want_done, want_failed, want_lat, want_front = sys.argv[1:6]
want_done, want_failed, want_lat = int(want_done), int(want_failed), int(want_lat)
want_front = [int(x) for x in want_front.split(",") if x]

class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack = []          # ids of the enclosing elements with one
        self.ids = {}
        self.circles = {}        # svg id -> list of (classes, trial)
        self.marks = {}          # svg id -> failed marks
        self.rows_failed = 0
        self.tips = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = (tag, a)
        if "data-tip" in a:
            self.tips += 1
        svg = next((i for t, i in reversed(self.stack) if t == "svg"), None)
        if tag == "circle" and "data-trial" in a and svg:
            self.circles.setdefault(svg, []).append((a.get("class", "").split(), int(a["data-trial"])))
        if tag == "path" and "failed-mark" in a.get("class", "") and "data-trial" in a and svg:
            self.marks[svg] = self.marks.get(svg, 0) + 1
        if tag == "tr" and a.get("class") == "failed":
            self.rows_failed += 1
        if tag not in ("circle", "path", "line", "rect", "meta", "br", "input", "img"):
            self.stack.append((tag, a.get("id")))
    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                del self.stack[k:]
                break

d = Dom()
d.feed(open(path, encoding="utf-8").read())
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
for pid in ("plot-best-trials", "plot-best-time", "plot-acc-latency", "plot-acc-macs", "plot-ops"):
    check(pid in d.ids and d.ids[pid][0] == "svg", "svg#%s missing" % pid)
for pid in ("summary", "config-text", "config-canonical", "objective-front"):
    check(pid in d.ids, "#%s missing" % pid)
check(len(d.circles.get("plot-best-trials", [])) == want_done,
      "plot-best-trials: %d circles, %d done trials" % (len(d.circles.get("plot-best-trials", [])), want_done))
check(d.marks.get("plot-best-trials", 0) == want_failed,
      "plot-best-trials: %d failure marks, %d failed" % (d.marks.get("plot-best-trials", 0), want_failed))
check(len(d.circles.get("plot-acc-macs", [])) == want_done, "plot-acc-macs: a circle per done trial")
check(len(d.circles.get("plot-acc-latency", [])) == want_lat, "plot-acc-latency: a circle per measured latency")
front = sorted(t for c, t in d.circles.get("plot-acc-macs", []) if "front" in c)
check(front == want_front, "MACs front %s, brute force %s" % (front, want_front))
check("pareto-macs" in d.ids and d.ids["pareto-macs"][1].get("d", "").startswith("M"), "path#pareto-macs missing")
if want_lat:
    check("pareto-latency" in d.ids, "path#pareto-latency missing")
if want_failed:
    check("failed" in d.ids and d.rows_failed == want_failed,
          "table#failed: %d rows, %d failed trials" % (d.rows_failed, want_failed))
check(d.tips >= want_done, "tooltip script did not run (%d data-tip)" % d.tips)
check("special" in open(path, encoding="utf-8").read() or "small" in path, "config text missing")
for e in errors:
    print("DOM:", e)
print("DOM: %d done, %d failed, front %s, %d tooltips" % (want_done, want_failed, front, d.tips))
sys.exit(1 if errors else 0)
PY

    if "$PY" -c "import PIL" 2>/dev/null; then
        "$PY" - "$exp.png" <<'PY' || fail "$exp: the screenshot does not show the plots"
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
w, h = im.size
counts = im.getcolors(maxcolors=w * h)  # [(count, (r, g, b)), ...]
def near(c, ref, tol=40):
    return all(abs(a - b) <= tol for a, b in zip(c, ref))
refs = {"points (#1f77b4)": (31, 119, 180), "front (#d62728)": (214, 39, 40), "best so far (#2ca02c)": (44, 160, 44)}
found = {k: sum(n for n, c in counts if near(c, ref)) for k, ref in refs.items()}
colours = [c for n, c in counts]
nonwhite = sum(n for n, c in counts if c != (255, 255, 255))
ok = len(colours) > 200 and nonwhite > 0.03 * w * h and all(v >= 80 for v in found.values())
print("PNG: %dx%d, %d colours, %.1f%% non-white, %s" % (w, h, len(colours), 100.0 * nonwhite / (w * h), found))
sys.exit(0 if ok else 1)
PY
    else
        size=$(stat -c %s "$exp.png")
        [ "$size" -gt 60000 ] || fail "$exp: screenshot only $size bytes (blank?)"
    fi
    if [ -n "${NAS_REPORT_KEEP:-}" ]; then
        mkdir -p "$NAS_REPORT_KEEP" && cp "$exp.html" "$exp.png" "$NAS_REPORT_KEEP/"
    fi
done
echo "PASS"
