#!/bin/sh
# include_arrows.sh CC VIEWS: each layer's include view (CMakeLists.txt's fl_view) lets its code
# include what its arrows allow and nothing else. Every line below is "view header yes|no".
set -u
CC=$1 VIEWS=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
while read -r view header want; do
    [ -z "$view" ] && continue
    printf '#include "%s"\n' "$header" >"$TMP/probe.c"
    if $CC -fsyntax-only -I"$VIEWS/$view" "$TMP/probe.c" 2>/dev/null; then got=yes; else got=no; fi
    if [ "$got" != "$want" ]; then
        echo "FAIL: view '$view' including '$header': expected $want, got $got"
        fails=$((fails + 1))
    fi
done <<'LIST'
base base/base.h yes
base compiler/ir/ir.h no
ir compiler/ir/ir.h yes
ir compiler/ops.h no
ir compiler/ir/fluid.pb-c.h no
compiler compiler/transpile.h yes
compiler compiler/ir/ir.h yes
compiler lang/eval.h no
compiler runtime/tensor.h no
lang lang/eval.h yes
lang compiler/verify.h yes
lang runtime/tensor.h no
runtime runtime/tensor.h yes
runtime compiler/ops.h yes
runtime compiler/ir/ir.h yes
runtime compiler/transpile.h no
runtime compiler/verify.h no
runtime lang/eval.h no
LIST
[ $fails -eq 0 ] && echo "PASS: 18 include rules hold"
exit $fails
