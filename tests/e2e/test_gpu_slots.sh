#!/usr/bin/env bash
# tests/e2e/test_gpu_slots.sh - `nas run` pins each local worker to its
# slot's GPU (issue 7 placement, issue 4 local pool), without a GPU:
# NAS_TEST_CUDA_DEVICES=2 makes the controller place as if two CUDA
# devices were present, and the NAS_FAULT "gpuenv" hook makes each worker
# fail its trial with the CUDA_VISIBLE_DEVICES it runs under. With
# workers.gpus = [1, 0], trials_per_gpu = 2 and the owner's
# CUDA_VISIBLE_DEVICES = "7,9", workers 0..3 are on GPUs 1,0,1,0, so they
# must report "9","7","9","7" (each GPU as the owner's list names it).
# Trial 3 crashes on its first attempt: its retry, on whatever worker, must
# report that worker's GPU too. Then: workers.device = "cuda" with no
# device refuses to start with a clear message, and a CPU search leaves
# CUDA_VISIBLE_DEVICES alone.
. "$(dirname "$0")/search_lib.sh"
need_fmnist
cd "$TMP" || fail "cd"

conf() { # FILE DEVICE BACKEND
    cat >"$1" <<CONF
experiment = "gpu-slots";
seed = 5;
data: { dir = "$FMNIST"; train_subset = 256; valid = 128; };
space: { channels = 4; cells_per_stage = 1; };
proxy: { epochs = 1; batch_size = 64; backend = "$3"; threads = 1; };
search: { strategy = "random"; trials = 6; };
workers: { count = 1; device = "$2"; gpus = [1, 0]; trials_per_gpu = 2;
           heartbeat_s = 2; max_retries = 1; };
CONF
}
conf "$TMP/g.conf" cuda auto

export CUDA_VISIBLE_DEVICES=7,9
export NAS_TEST_CUDA_DEVICES=2
export NAS_FAULT="crash@3/1,gpuenv@1,gpuenv@2,gpuenv@3,gpuenv@4,gpuenv@5,gpuenv@6,sleep_ms=300"
note "nas run with NAS_TEST_CUDA_DEVICES=2, CUDA_VISIBLE_DEVICES=7,9, NAS_FAULT=$NAS_FAULT"
# every trial fails by design: exit 1 (issue 22)
run 1 "$NAS" run "$TMP/g.conf" --db "$TMP/g.db"
grep_in "CUDA placement: 2 GPU(s) x 2 trial(s) per GPU; worker -> GPU: 1 0 1 0" "$TMP/err"
grep_in "4 worker process(es)" "$TMP/err"
expect_eq "trials" "$(sql "$TMP/g.db" "SELECT count(*) FROM trial WHERE status = 'failed'")" 6
expect_eq "crash retried" "$(sql "$TMP/g.db" "SELECT attempt FROM trial WHERE id = 3")" 2
while IFS='|' read -r id worker err; do
    case "$worker" in
    0 | 2) want=9 ;; # GPU 1 = entry 1 of "7,9"
    1 | 3) want=7 ;; # GPU 0 = entry 0
    *) fail "trial $id ran on worker '$worker' (expected 0..3)" ;;
    esac
    expect_eq "trial $id on worker $worker" "$err" \
        "CUDA_VISIBLE_DEVICES=$want (reported by NAS_FAULT gpuenv)"
done < <(sql "$TMP/g.db" "SELECT id, worker, error FROM trial ORDER BY id")
# every job first sleeps 300 ms, so the first four trials run at once, one
# on each of the four workers (the log names the worker of every start)
used=$(sed -n 's/.*\[trial [0-9]*, [0-9]*\/6\] train .* (worker \([0-9]*\)).*/\1/p' "$TMP/err" | sort -u | tr '\n' ' ')
expect_eq "workers that started trials" "$used" "0 1 2 3 "
unset NAS_FAULT

note "workers.device = \"cuda\" without a device: a clear refusal"
export NAS_TEST_CUDA_DEVICES=0
run 1 "$NAS" run "$TMP/g.conf" --db "$TMP/none.db"
grep_in 'workers.device = "cuda" but no CUDA device is present' "$TMP/err"

note "a CPU search: workers keep the owner's CUDA_VISIBLE_DEVICES"
unset NAS_TEST_CUDA_DEVICES
conf "$TMP/c.conf" cpu cpu
NAS_FAULT="gpuenv@1,gpuenv@2,gpuenv@3,gpuenv@4,gpuenv@5,gpuenv@6" \
    run 1 "$NAS" run "$TMP/c.conf" --db "$TMP/c.db"
expect_eq "cpu trials" "$(sql "$TMP/c.db" "SELECT group_concat(DISTINCT error) FROM trial")" \
    "CUDA_VISIBLE_DEVICES=7,9 (reported by NAS_FAULT gpuenv)"
grep -q "CUDA placement" "$TMP/err" && fail "a CPU search printed a CUDA placement"
echo "PASS"
