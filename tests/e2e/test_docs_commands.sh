#!/bin/sh
# Doc command tests: every ```sh block of the given Markdown files that is followed by a ```text
# block (nothing but blank lines between them) is run, and its output must be the text block.
#
# The convention, for writers of README.md, docs/running.md and docs/embedding.md:
#   - the ```sh block's lines run as one `sh` script from a scratch directory that looks like the
#     repository root after a build: every top-level entry of the source tree is a symlink, `build`
#     is the build tree under test, and build/tools is on PATH (so `flc` works as
#     `build/tools/flc`); files the commands write stay in the scratch directory, and blocks of
#     one file run in order in one scratch directory (a later block may use an earlier one's
#     files). The exit status is not checked: the output is the contract.
#   - the ```text block is what the commands print, stdout and stderr together, line by line,
#     with two markers for the parts that vary:
#       `…` (U+2026) inside a line matches any text within that line ("… samples/s");
#       a line holding only `...` (indentation allowed) matches any number of lines, none too.
#     Trailing blank lines of the output are ignored; everything else must match exactly.
#   - other blocks (```sh followed by prose, unlabelled blocks, ```text without a ```sh before it)
#     are not run: use them for commands that need a machine of their own or take minutes.
# Prints one line per block run and "N passed, N failed"; exits 1 on a failure or no block.
# usage: test_docs_commands.sh SOURCE_DIR BUILD_DIR DOC.md...
set -u
src=$1 build=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# match EXPECTED ACTUAL: exit 0 when the output ACTUAL matches the shown output EXPECTED.
match() {
    awk -v ell='…' '
        FNR == 1 { fileno++ }
        fileno == 1 { e[++ne] = $0; next }
        { a[++na] = $0 }
        function line_ok(pat, s,    parts, np, k, p, at) {
            np = split(pat, parts, ell)
            if (np == 1) return pat == s
            if (substr(s, 1, length(parts[1])) != parts[1]) return 0
            at = length(parts[1]) + 1
            for (k = 2; k < np; k++) {
                p = index(substr(s, at), parts[k])
                if (!p) return 0
                at += p - 1 + length(parts[k])
            }
            return length(s) - at + 1 >= length(parts[np]) &&
                   substr(s, length(s) - length(parts[np]) + 1) == parts[np]
        }
        function m(i, j,    k, key) { # e[i..] against a[j..]
            key = i SUBSEP j
            if (key in memo) return memo[key]
            if (i > ne) return memo[key] = (j > na)
            if (e[i] ~ /^[ \t]*\.\.\.[ \t]*$/) {
                for (k = j; k <= na + 1; k++) if (m(i + 1, k)) return memo[key] = 1
                return memo[key] = 0
            }
            if (j > na) return memo[key] = 0
            return memo[key] = line_ok(e[i], a[j]) && m(i + 1, j + 1)
        }
        END {
            while (na > 0 && a[na] == "") na--
            while (ne > 0 && e[ne] == "") ne--
            exit !m(1, 1)
        }' "$1" "$2"
}

for doc in "$@"; do
    name=$(basename "$doc" .md)
    dir=$tmp/$name
    work=$dir/work
    mkdir -p "$work"
    for entry in "$src"/* "$src"/.[!.]*; do
        [ -e "$entry" ] || continue
        case ${entry##*/} in build*) continue ;; esac
        ln -s "$entry" "$work/${entry##*/}"
    done
    ln -s "$build" "$work/build"
    # blocks: N.sh (the commands), N.txt (the shown output), N.line (where the sh block starts)
    awk -v dir="$dir" '
        /^```/ && inb != "" { # a closing fence
            if (inb == "sh") close(sh)
            if (inb == "text") close(txt)
            after_sh = (inb == "sh"); inb = ""; next
        }
        /^```sh[ \t]*$/ { n++; sh = sprintf("%s/%02d.sh", dir, n); printf "" > sh
                          ln = sprintf("%s/%02d.line", dir, n); print FNR > ln; close(ln)
                          inb = "sh"; next }
        /^```text[ \t]*$/ && after_sh { txt = sprintf("%s/%02d.txt", dir, n); printf "" > txt
                                        inb = "text"; next }
        /^```/ { inb = "other"; after_sh = 0; next }
        inb == "sh" { print > sh; next }
        inb == "text" { print > txt; next }
        inb == "other" || /^[ \t]*$/ { next }
        { after_sh = 0 }' "$doc"
    for sh in "$dir"/*.sh; do
        [ -e "$sh" ] || continue
        base=${sh%.sh}
        [ -e "$base.txt" ] || continue
        where="$name.md:$(cat "$base.line")"
        (cd "$work" && PATH="$build/tools:$PATH" sh "$sh") >"$base.out" 2>&1 </dev/null
        if match "$base.txt" "$base.out"; then
            pass=$((pass + 1))
            echo "ok   $where"
        else
            fail=$((fail + 1))
            echo "FAIL $where: the commands"
            sed 's/^/    /' "$sh"
            echo "  printed"
            sed 's/^/    /' "$base.out"
            echo "  but the doc shows"
            sed 's/^/    /' "$base.txt"
        fi
    done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
