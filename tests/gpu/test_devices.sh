#!/usr/bin/env bash
# tests/gpu/test_devices.sh - `nas devices` lists the compiled-in backends
# and the devices found; with the CUDA backend compiled in it either lists
# each device with its memory and compute capability or says plainly that no
# device is present and why; a missing libnas_cuda.so is said as plainly, and
# commands that need no GPU load no CUDA library (issue 29). Args: nas
# binary, source dir, shared dir.
set -euo pipefail
nas="$1"
out=$("$nas" devices)
printf '%s\n' "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^backends compiled in: ref cpu' <<<"$out" || fail "no backend list"
grep -q '^cpu   .*[0-9]\+ threads\?' <<<"$out" || fail "no CPU line with a thread count"
threads=$(getconf _NPROCESSORS_ONLN)
grep -q "^cpu   .*, $threads thread" <<<"$out" || fail "CPU thread count is not $threads"
if grep -q '^backends compiled in:.* cuda' <<<"$out"; then
    if grep -q '^cuda  [0-9]\+: ' <<<"$out"; then
        grep -q '^cuda  0: .*GiB, compute capability [0-9]\+\.[0-9]\+' <<<"$out" ||
            fail "CUDA device line lacks memory or compute capability"
    else
        grep -q '^cuda  CUDA backend compiled in, but no CUDA device is present (.\+)$' <<<"$out" ||
            fail "CUDA compiled in but neither devices nor a plain 'no device' line"
    fi
    # issue 29: the backend is a shared object loaded on demand. A missing
    # one is said plainly; commands that need no GPU never map it, nor cuDNN
    # and cuBLAS (LD_DEBUG=files lists every object the loader opens).
    miss=$(NAS_CUDA_LIBRARY=/nonexistent/libnas_cuda.so "$nas" devices)
    grep -q '^cuda  CUDA backend compiled in, but its library libnas_cuda.so cannot be loaded: /nonexistent/libnas_cuda.so: not found' <<<"$miss" ||
        fail "a missing libnas_cuda.so is not said plainly: $miss"
    libs() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -oE 'file=[^ ]*(cudnn|cublas|cudart|nas_cuda)[^ ]*' | sort -u || true; }
    grep -q 'libnas_cuda\.so' <<<"$(libs "$nas" devices)" || fail "nas devices did not load libnas_cuda.so"
    for args in "--help" "space $2/examples/nb201-table.conf"; do
        loaded=$(libs "$nas" $args)
        [ -z "$loaded" ] || fail "nas $args loads the CUDA libraries: $loaded"
    done
else
    grep -q '^cuda  CUDA backend not compiled in' <<<"$out" || fail "no 'not compiled in' line"
fi
# extra arguments are a usage error (exit 2)
set +e
"$nas" devices bogus >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "nas devices bogus exited $rc, want 2"
echo "ok"
