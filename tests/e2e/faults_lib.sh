# tests/e2e/faults_lib.sh - helpers for the fault, kill, reader and MPI
# tests (sourced after search_lib.sh; not a test itself).
#
# write_table CSV: a table-evaluator fixture covering every NAS-Bench-201
# cell (5^6 = 15625 rows) with a made-up but deterministic accuracy, so
# these tests never need the real NAS-Bench-201 file.
write_table() {
    awk 'BEGIN {
        split("none skip_connect nor_conv_1x1 nor_conv_3x3 avg_pool_3x3", op, " ");
        print "arch,cellstr,acc";
        n = 0;
        for (a = 1; a <= 5; a++) for (b = 1; b <= 5; b++) for (c = 1; c <= 5; c++)
        for (d = 1; d <= 5; d++) for (e = 1; e <= 5; e++) for (f = 1; f <= 5; f++) {
            printf "%d,|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|,%.4f\n", n, op[a], op[b], op[c],
                   op[d], op[e], op[f], 0.1 + 0.8 * ((a * 7 + b * 13 + c * 17 + d * 19 + e * 23 + f * 29 + n) % 97) / 97.0;
            n++;
        }
    }' >"$1"
}

# write_conf FILE TABLE TRIALS WORKERS [extra workers keys]
write_conf() {
    cat >"$1" <<CONF
experiment = "faults";
seed = 11;
search: { strategy = "random"; trials = $3; };
evaluator: { kind = "table"; table = "$2"; column = "acc"; table_scale = 1.0; };
workers: { count = $4; $5 };
CONF
}
