#!/usr/bin/env bash
# tests/e2e/test_chain_search.sh - a table search on a chain space, end to
# end, with each strategy (issue 14). The space is tests/data/conf/
# chain_small.conf (3 ops on 6 layers, 729 genotypes, 315 distinct keys);
# the synthetic table is made here from `nas space --list` (accuracy a
# function of the canonical key, so genotypes computing the same function
# score the same). For random, evolution and NAO: the run (trials slowed
# by NAS_FAULT=sleep_ms) is killed with kill -9, resumed, finishes 40
# trials with no key twice and every accuracy the table's, then is queried.
# Evolution reads a table keyed by canonical key (column "key").
# Distinct keys: the formula, enumeration and `sort -u` of the list agree.
. "$(dirname "$0")/search_lib.sh"
cd "$TMP" || fail "cd"
SPACE=$SRC/tests/data/conf/chain_small.conf

note "distinct keys: formula, enumeration, list"
run 0 "$NAS" space "$SPACE" --samples 0
grep_in "genotypes  729" "$TMP/out"
grep_in "keys       315 distinct (by formula); 315 by enumerating every genotype" "$TMP/out"
run 0 "$NAS" space "$SPACE" --list
cp "$TMP/out" "$TMP/list.csv"
expect_eq "listed genotypes" "$(tail -n +2 "$TMP/list.csv" | wc -l)" 729
expect_eq "distinct keys in the list" "$(tail -n +2 "$TMP/list.csv" | cut -d'"' -f4 | sort -u | wc -l)" 315

# acc = f(key): 50 + 7 per mb3_k3 + 4 per conv_k3 + 0.5 per stage-2 layer that runs
awk -F'"' 'NR == 1 { print "genotype,key,acc"; next }
    { k = $4; s2 = k; sub(/^[^|]*\|/, "", s2);
      m = gsub(/mb3_k3/, "&", k); c = gsub(/conv_k3/, "&", k); n = split(s2, a, ":");
      printf "\"%s\",\"%s\",%.2f\n", $2, k, 50 + 7 * m + 4 * c + 0.5 * n }' "$TMP/list.csv" >"$TMP/by_genotype.csv"
cut -d, -f2,3 "$TMP/by_genotype.csv" | sort -u >"$TMP/by_key.csv"
sed -i '1!{/^key,acc$/d}' "$TMP/by_key.csv"
( echo "key,acc"; grep -v '^key,acc$' "$TMP/by_key.csv" ) >"$TMP/k.csv" && mv "$TMP/k.csv" "$TMP/by_key.csv"
expect_eq "rows keyed by key" "$(tail -n +2 "$TMP/by_key.csv" | wc -l)" 315

export NAS_FAULT="sleep_ms=60"
for strategy in random evolution nao; do
    table=by_genotype.csv
    [ $strategy = evolution ] && table=by_key.csv
    sed 's/^experiment = .*/experiment = "chain-'$strategy'";/' "$SPACE" >"$TMP/$strategy.conf"
    cat >>"$TMP/$strategy.conf" <<CONF
evaluator = { kind = "table"; table = "$TMP/$table"; column = "acc"; table_scale = 0.01; };
search = { strategy = "$strategy"; trials = 40; population = 10; sample_size = 3;
           nao = { seed_archs = 10; epochs = 5; }; };
workers = { count = 1; };
CONF
    DB=$TMP/$strategy.db
    note "$strategy: run, kill -9, resume"
    "$NAS" run "$TMP/$strategy.conf" --db "$DB" --quiet >"$TMP/run.out" 2>&1 &
    RUN_PID=$!
    for _ in $(seq 200); do
        n=$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'" 2>/dev/null || echo 0)
        [ "${n:-0}" -ge 8 ] && break
        sleep 0.05
    done
    kill -9 "$RUN_PID" 2>/dev/null; wait "$RUN_PID" 2>/dev/null; RUN_PID=
    done_at_kill=$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")
    [ "$done_at_kill" -lt 40 ] || fail "$strategy finished before the kill"
    run 0 "$NAS" run "$TMP/$strategy.conf" --db "$DB" --quiet
    expect_eq "$strategy trials" "$(sql "$DB" "SELECT count(*) FROM trial WHERE status = 'done'")" 40
    expect_eq "$strategy keys twice" "$(sql "$DB" "SELECT count(*) - count(DISTINCT arch_key) FROM trial")" 0
    sqlite3 -batch "$DB" ".import --csv $TMP/by_genotype.csv tab" || fail "import"
    expect_eq "$strategy accuracies are the table's" \
        "$(sql "$DB" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id JOIN tab ON tab.genotype = t.genotype WHERE abs(r.val_accuracy - tab.acc * 0.01) < 1e-9")" 40
    expect_eq "$strategy arch_key is the canonical key" \
        "$(sql "$DB" "SELECT count(*) FROM trial t JOIN tab ON tab.genotype = t.genotype AND tab.key = t.arch_key")" 40
    expect_eq "$strategy MACs are the counter's" \
        "$(sql "$DB" "SELECT count(*) FROM trial t JOIN result r ON r.trial_id = t.id WHERE r.macs > 0 AND r.params > 0")" 40
    run 0 "$NAS" query --db "$DB" --format csv --limit 3
    expect_eq "$strategy query rows" "$(tail -n +2 "$TMP/out" | wc -l)" 3
    best=$(sql "$DB" "SELECT max(acc + 0) FROM tab JOIN trial t ON t.genotype = tab.genotype")
    note "$strategy: $done_at_kill done at the kill; best of 40: $best"
done
note "constraint pre-check on MACs (the counter, no trial over the bound)"
unset NAS_FAULT
bound=$(tail -n +2 "$TMP/list.csv" | cut -d, -f3 | sort -n | awk '{ v[NR] = $1 } END { print v[int(NR / 2)] }')
sed 's/^experiment = .*/experiment = "chain-mmacs";/' "$SPACE" >"$TMP/c.conf"
cat >>"$TMP/c.conf" <<CONF
evaluator = { kind = "table"; table = "$TMP/by_genotype.csv"; column = "acc"; table_scale = 0.01; };
search = { strategy = "evolution"; trials = 30; population = 8; sample_size = 3; };
constraints = { mmacs = $(awk -v b="$bound" 'BEGIN { printf "%.6f", b / 1e6 }'); };
workers = { count = 0; };
CONF
run 0 "$NAS" run "$TMP/c.conf" --db "$TMP/c.db" --quiet
expect_eq "constrained trials" "$(sql "$TMP/c.db" "SELECT count(*) FROM trial WHERE status = 'done'")" 30
expect_eq "trials over the MAC bound" \
    "$(sql "$TMP/c.db" "SELECT count(*) FROM result WHERE macs > $bound")" 0
echo "PASS"
