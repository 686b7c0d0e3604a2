#!/usr/bin/env bash
# tests/e2e/test_report_live.sh - issue 33, item 5: `nas run --report FILE`
# rewrites the HTML report after every trial, atomically (FILE.tmp, then
# rename): every version seen while the search runs is a complete, well
# nested page (tests/e2e/check_html.py) that reloads itself (meta
# refresh); the last one, written when the run ends, does not, has a row
# per trial in its "All trials" table and equals `nas report`'s page.
# Chromium (headless; skipped visibly when absent) renders the table, and
# its inline script sorts it by a clicked column. A multi-fidelity search
# keeps its live report too, and `nas show` lists a trial's rungs.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$PY" ] || skip "$PY not found (Debian python3)"
cd "$TMP" || fail "cd"
TRIALS=6
cat >live.conf <<CONF
experiment = "live";
seed = 7;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "ref"; threads = 1; };
search: { strategy = "random"; trials = $TRIALS; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF

note "a search with --report: snapshots of the page while it runs"
"$NAS" run live.conf --db live.db --quiet --report live.html >run.out 2>run.err &
RUN_PID=$!
last="" k=0
while kill -0 "$RUN_PID" 2>/dev/null; do
    now=$(stat -c '%i %Y.%y' live.html 2>/dev/null)
    if [ -n "$now" ] && [ "$now" != "$last" ]; then
        cp live.html "snap-$k.html" 2>/dev/null && k=$((k + 1))
        last=$now
    fi
    sleep 0.05
done
wait "$RUN_PID"
rc=$?
[ "$rc" = 0 ] || { cat run.out run.err; fail "nas run --report exited $rc"; }
RUN_PID=
[ -e live.html.tmp ] && fail "live.html.tmp left behind"
[ "$k" -ge 2 ] || fail "only $k versions of live.html seen during the run"
live=0 counts=""
for ((i = 0; i < k; i++)); do
    "$PY" "$HERE/check_html.py" "snap-$i.html" >check.out || { cat check.out; fail "snap-$i.html"; }
    if grep -q "refresh True" check.out; then
        live=$((live + 1))
        counts="$counts $(sed -n 's/.*: \([0-9]*\) trial rows.*/\1/p' check.out)"
    fi
done
note "$k versions, $live of them live (trial rows:$counts)"
[ "$live" -ge 2 ] || fail "fewer than 2 live versions (with meta refresh) seen"
grep -q 'id="live"' "snap-0.html" || fail "a live version does not say it is live"

note "the run's last version: no reload, every trial, as nas report writes it"
"$PY" "$HERE/check_html.py" live.html --refresh no --rows "$TRIALS" || fail "final live.html"
grep -q 'id="live"' live.html && fail "the final page still says it is live"
run 0 "$NAS" report --db live.db -o plain.html
"$PY" "$HERE/check_html.py" plain.html --refresh no --rows "$TRIALS" || fail "nas report's page"
diff <(grep -v 'generated 20' live.html) <(grep -v 'generated 20' plain.html) >/dev/null ||
    fail "the final live report differs from nas report's"

note "a rerun without --report leaves the page alone; with it, rewrites it"
run 0 "$NAS" run live.conf --db live.db --quiet
run 0 "$NAS" run live.conf --db live.db --quiet --report live2.html
"$PY" "$HERE/check_html.py" live2.html --refresh no --rows "$TRIALS" || fail "live2.html"
run 2 "$NAS" run live.conf --db live.db --report
grep_in "\-\-report needs a path" "$TMP/err"

note "Chromium renders the table and its script sorts it"
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
    echo "SKIP (part): chromium is not installed (scripts/deps.sh test): no rendering check"
else
    dump() { timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --user-data-dir="$TMP/chrome" \
        --dump-dom "file://$TMP/$1" 2>/dev/null; }
    dump live.html >dom.html
    "$PY" "$HERE/check_html.py" dom.html --rows "$TRIALS" >/dev/null ||
        { "$PY" "$HERE/check_html.py" dom.html; fail "Chromium's DOM lacks the trial rows"; }
    grep -q '<th data-type="num" tabindex="0" class=" sortable"' dom.html ||
        fail "the table's script did not run in Chromium"
    # click "val_accuracy (max)" (column 5): ascending accuracy, missing last
    sed 's|</body>|<script>document.querySelectorAll("#trial-table th")[4].click();</script></body>|' \
        live.html >click.html
    dump click.html >clicked.html
    got=$("$PY" - clicked.html <<'PYEOF'
import re, sys
html = open(sys.argv[1]).read()
body = html[html.index('id="trial-table"'):]
body = body[body.index("<tbody>"):body.index("</tbody>")]
print(" ".join(re.findall(r'<tr[^>]*data-trial="(\d+)"', body)))
PYEOF
)
    want=$(sql live.db "SELECT group_concat(id, ' ') FROM (SELECT t.id FROM trial t JOIN result r ON r.trial_id = t.id ORDER BY r.val_accuracy, t.id)")
    expect_eq "rows sorted by val_accuracy in Chromium" "$got" "$want"
fi

note "multi-fidelity: the live report, and nas show's rung history"
cat >mf.conf <<CONF
experiment = "mf";
seed = 3;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { batch_size = 64; backend = "ref"; threads = 1; };
search: { strategy = "random"; trials = 3; fidelity = { min = 1; max = 3; eta = 3; scheduler = "sh"; }; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
run 0 "$NAS" run mf.conf --db mf.db --quiet --report mf.html
"$PY" "$HERE/check_html.py" mf.html --refresh no --rows 3 || fail "mf.html"
top=$(sql mf.db "SELECT trial_id FROM rung WHERE fidelity = 3")
[ -n "$top" ] || fail "no trial promoted to 3 epochs"
run 0 "$NAS" show --db mf.db "$top"
for f in 1 3; do
    acc=$(sql mf.db "SELECT printf('%.4f', val_accuracy) FROM rung WHERE trial_id = $top AND fidelity = $f")
    grep_in "^rung           $f: val_accuracy $acc, loss [0-9.]*, [0-9.]* s$" "$TMP/out"
done
other=$(sql mf.db "SELECT min(trial_id) FROM rung WHERE trial_id != $top")
run 0 "$NAS" show --db mf.db "$other"
expect_eq "rung lines of a trial stopped at 1 epoch" "$(grep -c '^rung ' "$TMP/out")" 1
run 0 "$NAS" show --db live.db 1
grep -q '^rung ' "$TMP/out" && fail "rung lines for a search without a scheduler"
echo "PASS"
