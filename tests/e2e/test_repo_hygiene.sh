#!/usr/bin/env bash
# tests/e2e/test_repo_hygiene.sh - issue 22, point 9:
#  - every "see FILE" / "FILE ("Section")" reference in the shipped
#    examples names a file that exists (and a section heading that exists);
#  - whatever `nas run` writes beside its database (the run lock, the kept
#    weights directory, SQLite's WAL files) is ignored by .gitignore, so
#    running the README's commands in a clone leaves `git status` clean.
. "$(dirname "$0")/search_lib.sh"
need_fmnist

note "references in examples/*.conf resolve"
for conf in "$SRC"/examples/*.conf; do
    # docs/x.md or README.md, optionally followed by ("Section")
    grep -o '\(docs/[a-z-]*\.md\|README\.md\)\( ("[^"]*")\)\?' "$conf" | sort -u |
        while IFS= read -r ref; do
            file=${ref%% *}
            [ -f "$SRC/$file" ] || fail "$(basename "$conf") refers to $file, which does not exist"
            case $ref in
            *'("'*)
                sec=${ref#*(\"}
                sec=${sec%\")}
                grep -q "^#\+ .*$sec" "$SRC/$file" ||
                    fail "$(basename "$conf") refers to section \"$sec\" of $file, which has none"
                ;;
            esac
        done || exit 1
done
grep -q 'space.conf keys' "$SRC"/examples/*.conf && fail "an example still points to \"space.conf keys\""

command -v git >/dev/null 2>&1 || skip "git is not installed: cannot check .gitignore"
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || skip "$SRC is not a git checkout"

note "files nas writes beside a database are ignored by git"
cat >"$TMP/h.conf" <<CONF
experiment = "e2e-hygiene";
seed = 2;
data: { dir = "$FMNIST"; train_subset = 128; valid = 64; };
space: { channels = 4; };
proxy: { epochs = 1; batch_size = 64; threads = 1; };
search: { strategy = "random"; trials = 2; };
evaluator: { latency_runs = 1; latency_warmup = 0; };
workers: { count = 0; };
CONF
mkdir "$TMP/w"
run 0 "$NAS" run "$TMP/h.conf" --db "$TMP/w/example.db" --quiet
beside=$(cd "$TMP/w" && find . -mindepth 1 \( -type d -printf '%P/\n' \) -o -printf '%P\n' | sort)
note "nas wrote: $(echo $beside)"
echo "$beside" | grep -q '^example.db.lock$' || fail "no run lock beside the database (test is stale)"
echo "$beside" | grep -q '^example.db.weights/' || fail "no kept weights beside the database"
for f in $beside; do
    git -C "$SRC" check-ignore -q --no-index "$f" || fail "git status would show '$f' (add it to .gitignore)"
done
echo "PASS"
