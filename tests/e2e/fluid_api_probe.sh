#!/bin/sh
# fluid_api_probe.sh FLC PROBES TSV: probes every name of Fluid 1.5's API table and checks that
# the table's status column (docs/fluid_api.tsv) is the one the probes give, so that the table
# cannot drift from the code. With FL_UPDATE_DOCS=1 in the environment it rewrites TSV instead.
#
# PROBES (tests/e2e/fluid_api_probes.fltab) holds, after an @prelude program (imports and a few
# data vars every probe may use), one or more probes per name, each a small program written as
# a Fluid user writes it, with Fluid's arguments:
#   @module MODULE          the TSV's module column of the probes that follow (a section)
#   @probe NAME [ASPECT]    starts a probe of (MODULE, NAME); ASPECT names one part of a name
#                           probed by several programs (an argument, a method)
#   @refuse                 the probe is refused by design: it must fail with a located error at
#                           a line of its own program (file:line:col: error: WHY), and WHY is
#                           the row's note
#   @fluid-ignores          (after @refuse) what the probe passes has no meaning in Fluid 1.5
#                           itself: its code ignores the argument or stops on it. fluidc refuses
#                           it rather than accept it and do nothing; the refusal leaves the row
#                           done, with the note "ASPECT refused (no meaning in Fluid 1.5): WHY"
#   @note TEXT              a note for the row (what differs from Fluid), joined with "; "
#   @file NAME ... @end     the lines between are a file NAME in the directory the probes run
#                           in (a file a name reads when the script compiles)
# A probe without @refuse must compile (`flc check`); a probe with @refuse must not. Either
# failing is a test failure, as is a probe of a name the TSV does not list.
#
# The status of a row: done (every probe compiles, or is refused with @fluid-ignores), refused
# (every probe is refused: the note says why), partial (some are: "ASPECT refused: WHY"), absent
# (no probe: the TSV's note kept).
# Prints one line per failure and the counts; exits 0 when every probe behaves and the TSV is
# up to date.
set -u
FLC=$1 PROBES=$2 TSV=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. the probes, each as DIR/NNN.fl (prelude + body) and DIR/NNN.hdr (module, name, aspect,
# refuse, notes; one per line), and the prelude's line count (a refusal must be located after it)
awk -v dir="$tmp" '
    function close_probe() { if (f != "") { close(f ".fl"); close(f ".hdr") } }
    /^@prelude[ \t]*$/ { inpre = 1; next }
    /^@module / { close_probe(); f = ""; inpre = 0; module = substr($0, 9); next }
    /^@probe / {
        close_probe(); inpre = 0; n++
        f = sprintf("%s/%04d", dir, n)
        rest = substr($0, 8); name = rest; aspect = ""
        if (index(rest, " ")) { name = substr(rest, 1, index(rest, " ") - 1); aspect = substr(rest, index(rest, " ") + 1) }
        if (module == "") { print "PROBES: @probe " name " before any @module" > "/dev/stderr"; exit 2 }
        printf "module\t%s\nname\t%s\naspect\t%s\n", module, name, aspect > (f ".hdr")
        printf "%s", pre > (f ".fl")
        next
    }
    /^@end[ \t]*$/ && file != "" { close(file); file = ""; next }
    file != "" { print > file; next }
    /^@file [^ \/]+[ \t]*$/ { file = dir "/" $2; printf "" > file; next }
    /^@refuse[ \t]*$/ && f != "" { print "refuse\t1" >> (f ".hdr"); refuse[f] = 1; next }
    /^@fluid-ignores[ \t]*$/ && f != "" {
        if (!(f in refuse)) { print "PROBES:" NR ": @fluid-ignores without @refuse before it" > "/dev/stderr"; exit 2 }
        print "ignores\t1" >> (f ".hdr"); next
    }
    /^@note / && f != "" { print "note\t" substr($0, 7) >> (f ".hdr"); next }
    /^@/ { print "PROBES:" NR ": unknown directive: " $0 > "/dev/stderr"; exit 2 }
    inpre { pre = pre $0 "\n"; npre++; next }
    f != "" { print >> (f ".fl") }
    END { if (file != "") { print "PROBES: @file without @end" > "/dev/stderr"; exit 2 }
          close_probe(); print npre > (dir "/prelude_lines") }' "$PROBES" || exit 2
npre=$(cat "$tmp/prelude_lines")

# 2. run each probe; DIR/results gets "module<TAB>name<TAB>aspect<TAB>verdict<TAB>text" with
# verdict done, refused (text: why), ignored (refused, of no meaning in Fluid 1.5: text: why) or
# bad (text: what went wrong)
fail=0
: >"$tmp/results"
for hdr in "$tmp"/[0-9]*.hdr; do
    [ -e "$hdr" ] || continue
    base=${hdr%.hdr}
    field() { awk -F '\t' -v k="$1" '$1 == k { print $2 }' "$hdr"; }
    module=$(field module) name=$(field name) aspect=$(field aspect) refuse=$(field refuse)
    verdict=refused
    [ -n "$(field ignores)" ] && verdict=ignored
    note=$(field note | awk 'NR > 1 { printf "; " } { printf "%s", $0 }')
    cp "$base.fl" "$tmp/probe.fl"
    (cd "$tmp" && "$FLC" check probe.fl) >"$base.out" 2>"$base.err"
    rc=$?
    first=$(grep -m1 ': error: ' "$base.err")
    line=$(printf '%s\n' "$first" | sed -n 's/^probe\.fl:\([0-9][0-9]*\):[0-9][0-9]*: error: .*/\1/p')
    why=$(printf '%s\n' "$first" | sed 's/^[^ ]*: error: //')
    label="$module $name${aspect:+ ($aspect)}"
    if [ -z "$refuse" ] && [ "$rc" = 0 ]; then
        printf '%s\t%s\t%s\tdone\t%s\n' "$module" "$name" "$aspect" "$note" >>"$tmp/results"
    elif [ -z "$refuse" ]; then
        echo "FAIL $label: the probe does not compile (exit $rc): $first"
        sed 's/^/    /' "$base.err" | head -5
        fail=$((fail + 1))
    elif [ "$rc" = 1 ] && [ -n "$line" ] && [ "$line" -gt "$npre" ]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$module" "$name" "$aspect" "$verdict" "$why${note:+; $note}" >>"$tmp/results"
    elif [ "$rc" = 0 ]; then
        echo "FAIL $label: @refuse, but the probe compiles"
        fail=$((fail + 1))
    else
        echo "FAIL $label: @refuse needs a located error at a line of the probe's own program (exit $rc): ${first:-$(head -1 "$base.err")}"
        fail=$((fail + 1))
    fi
done

# 3. the table: each row's status from its probes' verdicts, in the TSV's order
awk -F '\t' -v OFS='\t' -v res="$tmp/results" '
    BEGIN {
        while ((getline l < res) > 0) {
            split(l, r, "\t"); k = r[1] SUBSEP r[2]
            n[k]++
            if (r[4] == "done") { done[k]++; if (r[5] != "") dnote[k] = dnote[k] (dnote[k] == "" ? "" : "; ") r[5] }
            else if (r[4] == "ignored") { done[k]++; dnote[k] = dnote[k] (dnote[k] == "" ? "" : "; ") r[3] " refused (no meaning in Fluid 1.5): " r[5] }
            else { ref[k]++; rnote[k] = rnote[k] (rnote[k] == "" ? "" : "; ") (r[3] == "" ? "" : r[3] " refused: ") r[5] }
            seen[k] = r[1] "." r[2]
        }
    }
    NR == 1 { print; next }
    {
        k = $1 SUBSEP $2; listed[k] = 1
        if (!(k in n)) { print $1, $2, "absent", $4; next }
        if (!(k in ref)) print $1, $2, "done", dnote[k]
        else if (!(k in done)) print $1, $2, "refused", rnote[k]
        else print $1, $2, "partial", rnote[k] (dnote[k] == "" ? "" : "; " dnote[k])
    }
    END {
        for (k in seen) if (!(k in listed)) { print "FAIL: a probe of " seen[k] ", which the table does not list" > "/dev/stderr"; bad = 1 }
        exit bad
    }' "$TSV" >"$tmp/table.tsv" || fail=$((fail + 1))

if [ -n "${FL_UPDATE_DOCS:-}" ] && [ "$fail" = 0 ]; then
    cp "$tmp/table.tsv" "$TSV"
    echo "rewrote $TSV"
elif ! cmp -s "$tmp/table.tsv" "$TSV"; then
    echo "FAIL: $TSV is not what the probes give (FL_UPDATE_DOCS=1 rewrites it):"
    diff "$TSV" "$tmp/table.tsv" | head -40
    fail=$((fail + 1))
fi
awk -F '\t' 'NR > 1 { c[$3]++ } END { printf "%d done, %d partial, %d refused, %d absent\n", c["done"], c["partial"], c["refused"], c["absent"] }' "$tmp/table.tsv"
[ "$fail" = 0 ]
