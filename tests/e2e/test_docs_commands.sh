#!/bin/sh
# Doc tests of what the docs show a tool printing. Two kinds of checks:
#
# 1. Commands with their output. Every ```sh block of the given Markdown files that is followed by
#    a ```text block (nothing but blank lines between them) is run, and its output must be the
#    text block. The convention, for writers of README.md and docs/*.md:
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
#   - other blocks (```sh followed by prose, unlabelled blocks) are not run: use them for
#     commands that need a machine of their own or take minutes.
#
# 2. Quoted messages. A message the docs quote without the command that prints it (in prose, in a
#    table, in a ```text block with no ```sh block before it) is a quote of QUOTES
#    (tests/e2e/doc_quotes.txt, whose head says its format): the quote must be in the doc as
#    written (whitespace and line breaks counting as one space) and its commands must print it.
#    Every such message must have its quote: each line of a ```text block without a ```sh block
#    before it, and each line of an unlabelled block and each `code span` that holds
#    "error:", "error in op", "warning:", "panic:" or "deadlock:", must contain a quote of its doc
#    at least half its length.
#
# Prints one line per block and quote and "N passed, N failed"; exits 1 on a failure or nothing run.
# usage: test_docs_commands.sh SOURCE_DIR BUILD_DIR QUOTES DOC.md...
set -u
src=$1 build=$2 quotes=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# scratch DIR: DIR becomes a scratch repository root (symlinks to the sources, build).
scratch() {
    mkdir -p "$1"
    for entry in "$src"/* "$src"/.[!.]*; do
        [ -e "$entry" ] || continue
        case ${entry##*/} in build*) continue ;; esac
        ln -s "$entry" "$1/${entry##*/}"
    done
    ln -s "$build" "$1/build"
}

# run DIR SCRIPT OUT: run SCRIPT from DIR with the build's tools on PATH.
run() {
    (cd "$1" && PATH="$build/tools:$PATH" sh "$2") >"$3" 2>&1 </dev/null
}

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

# contains QUOTE FILE: some line of FILE contains QUOTE (`…` in QUOTE matching any text).
contains() {
    Q=$1 awk -v ell='…' '
        BEGIN { np = split(ENVIRON["Q"], parts, ell) }
        { at = 1
          for (k = 1; k <= np; k++) {
              p = index(substr($0, at), parts[k])
              if (!p) next
              at += p - 1 + length(parts[k])
          }
          found = 1; exit }
        END { exit !found }' "$2"
}

# The quotes: QUOTES cut into records, one directory each: doc (its path), q (the quotes, one a
# line), sh (the commands).
qdir=$tmp/quotes
mkdir -p "$qdir"
awk -v dir="$qdir" '
    function flush() { if (n && inrec) { close(q); close(sh) }; inrec = 0 }
    /^#/ { next }
    /^== / { flush(); doc = substr($0, 4); next }
    /^[ \t]*$/ { flush(); next }
    {
        if (!inrec) {
            n++; inrec = 1
            d = sprintf("%s/%03d", dir, n); system("mkdir -p " d)
            q = d "/q"; sh = d "/sh"; printf "" > q; printf "" > sh
            f = d "/doc"; print doc > f; close(f)
            f = d "/line"; print FNR > f; close(f)
        }
        if (substr($0, 1, 2) == "> ") print substr($0, 3) > q
        else if (substr($0, 1, 2) == "$ ") print substr($0, 3) > sh
        else if ($0 == "$") print "" > sh
        else { printf "%s:%d: a line of a quote record starts with \"> \" or \"$ \"\n", FILENAME, FNR
               bad = 1 }
    }
    END { flush(); exit bad }' "$quotes" || fail=$((fail + 1))

# norm FILE: FILE as one line, every run of blanks and line breaks one space.
norm() {
    tr '\n\t' '  ' <"$1" | tr -s ' '
}

for doc in "$@"; do
    name=$(basename "$doc" .md)
    rel=${doc#"$src"/}
    dir=$tmp/$name
    work=$dir/work
    scratch "$work"
    # blocks: N.sh (the commands), N.txt (the shown output), N.line (where the sh block starts);
    # cands: the messages that need a quote, "LINE<tab>TEXT".
    awk -v dir="$dir" '
        function cand(line, s) {
            gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s)
            if (s != "" && s != "...") printf "%d\t%s\n", line, s > (dir "/cands")
        }
        function keyword(s) { return s ~ /error:|error in op|warning:|panic:|deadlock:/ }
        function spans(line, s,    parts, np, k) { # the code spans of prose text s
            gsub(/``+/, "", s)
            np = split(s, parts, "`")
            for (k = 2; k <= np; k += 2) if (keyword(parts[k])) cand(line, parts[k])
        }
        function prose_end() { if (para != "") spans(pline, para); para = "" }
        /^```/ && inb != "" { # a closing fence
            if (inb == "sh") close(sh)
            if (inb == "text") close(txt)
            after_sh = (inb == "sh"); inb = ""; next
        }
        /^```/ { prose_end() }
        /^```sh[ \t]*$/ { n++; sh = sprintf("%s/%02d.sh", dir, n); printf "" > sh
                          ln = sprintf("%s/%02d.line", dir, n); print FNR > ln; close(ln)
                          inb = "sh"; next }
        /^```text[ \t]*$/ && after_sh { txt = sprintf("%s/%02d.txt", dir, n); printf "" > txt
                                        inb = "text"; next }
        /^```text[ \t]*$/ { inb = "orphan"; after_sh = 0; next }
        /^```[ \t]*$/ { inb = "plain"; after_sh = 0; next }
        /^```/ { inb = "other"; after_sh = 0; next }
        inb == "sh" { print > sh; next }
        inb == "text" { print > txt; next }
        inb == "orphan" { cand(FNR, $0); next }
        inb == "plain" { if (keyword($0)) cand(FNR, $0); next }
        inb == "other" { next }
        /^[ \t]*$/ { prose_end(); next }
        { after_sh = 0; if (para == "") pline = FNR; para = para " " $0 }
        END { prose_end() }' "$doc"
    for sh in "$dir"/*.sh; do
        [ -e "$sh" ] || continue
        base=${sh%.sh}
        [ -e "$base.txt" ] || continue
        where="$rel:$(cat "$base.line")"
        run "$work" "$sh" "$base.out"
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
    # the quotes of this doc: in the doc, and printed by their commands
    norm "$doc" >"$dir/norm"
    : >"$dir/quotes"
    for rec in "$qdir"/*; do
        [ -e "$rec/doc" ] || continue
        [ "$(cat "$rec/doc")" = "$rel" ] || continue
        cat "$rec/q" >>"$dir/quotes"
        where="${quotes##*/}:$(cat "$rec/line") ($rel)"
        scr=$rec/work
        scratch "$scr"
        run "$scr" "$rec/sh" "$rec/out"
        bad=
        while IFS= read -r q; do
            if ! grep -qF -- "$q" "$dir/norm"; then
                bad="$bad
  '$q' is not in $rel"
            elif ! contains "$q" "$rec/out"; then
                bad="$bad
  '$q' is not printed"
            fi
        done <"$rec/q"
        if [ -z "$bad" ]; then
            pass=$((pass + 1))
            echo "ok   $where"
        else
            fail=$((fail + 1))
            echo "FAIL $where:$bad"
            echo "  the commands"
            sed 's/^/    /' "$rec/sh"
            echo "  printed"
            sed 's/^/    /' "$rec/out"
        fi
    done
    # every message that needs a quote has one
    [ -e "$dir/cands" ] || continue
    while IFS='	' read -r line text; do
        if ! C=$text awk '
                BEGIN { c = ENVIRON["C"] }
                index(c, $0) && 2 * length($0) >= length(c) { found = 1; exit }
                END { exit !found }' "$dir/quotes"; then
            fail=$((fail + 1))
            echo "FAIL $rel:$line: a message with no quote in ${quotes##*/} (nor a \`\`\`sh block): $text"
        fi
    done <"$dir/cands"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
