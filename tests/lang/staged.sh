#!/bin/sh
# staged.sh FLRUN: the table-driven test of staged assignment (label lang). For every runtime
# construct (if, else, while, for v in ch, a select case, parallel_for, an if inside a while),
# every kind of assignment in its body (a Var computed outside, an op result, nothing, a swap, a
# name another name aliases, a value received, a channel) and its body taken or not, it builds two
# programs: one whose condition is a run-time value (a bool Var, a loop bound, a channel's
# contents, the case a select picks) and its twin where the same condition is a compile-time
# value (Python's if and for, a plain receive). Both must run and print the same values: a name
# assigned in a runtime body is carried out exactly when the body runs.
# Prints one line per difference and "N passed, N failed".
set -u
FLRUN=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# body KIND INDENT: the statements of a body of kind KIND, indented by INDENT.
body() {
    case $1 in
    outside) printf '%sx = y\n' "$2" ;;
    op) printf '%sx = y + x\n' "$2" ;;
    nothing) printf '%spass\n' "$2" ;;
    swap) printf '%sx, y = y, x\n' "$2" ;;
    alias) printf '%sx = x + 10\n%sy = z\n' "$2" "$2" ;;
    twice) printf '%sx = y\n%sy = y * 2\n%sx = x + y\n' "$2" "$2" "$2" ;;
    elem) printf '%sx = v\n' "$2" ;;
    chan) printf '%sq = r\n' "$2" ;;
    esac
}

prelude() {
    cat <<'EOF'
import fluid
from fluid import layers
x = layers.fill_constant(shape=[1], dtype="int64", value=1)
y = layers.fill_constant(shape=[1], dtype="int64", value=5)
z = x
q = fluid.make_chan(dtype="int64", shape=[1], capacity=2)
r = fluid.make_chan(dtype="int64", shape=[1], capacity=2)
EOF
}

epilogue() {
    cat <<'EOF'
layers.Print(x, message="x")
layers.Print(y, message="y")
layers.Print(z, message="z")
q.send(x)
layers.Print(len(q), message="lq")
layers.Print(len(r), message="lr")
EOF
}

# program CONSTRUCT KIND TAKEN MODE(rt|ct): the program on stdout.
program() {
    con=$1 kind=$2 taken=$3 mode=$4
    T=False K=0
    [ "$taken" = 1 ] && T=True K=2
    prelude
    case $con in
    if_then | if_else)
        if [ "$mode" = rt ]; then
            echo "c = layers.fill_constant(shape=[1], dtype=\"bool\", value=$T)"
            cond=c
        else
            cond=$T
        fi
        if [ "$con" = if_then ]; then
            echo "if $cond:"
            body "$kind" "    "
        else
            echo "if not $cond:"
            echo "    pass"
            echo "else:"
            body "$kind" "    "
        fi ;;
    while | while_if)
        echo 'i = layers.fill_constant(shape=[1], dtype="int64", value=0)'
        if [ "$mode" = rt ]; then
            echo "n = layers.fill_constant(shape=[1], dtype=\"int64\", value=$K)"
            echo "c = layers.fill_constant(shape=[1], dtype=\"bool\", value=$T)"
            echo "while i < n:"
            cond=c
        else
            echo "for _k in range($K):"
            cond=$T
        fi
        echo "    i = i + 1"
        if [ "$con" = while ]; then
            body "$kind" "    "
        else
            echo "    if $cond:"
            body "$kind" "        "
        fi
        echo 'layers.Print(i, message="i")' ;;
    for_chan)
        echo 'ch = fluid.make_chan(dtype="int64", shape=[1], capacity=2)'
        echo 'for k in range(2):'
        echo '    ch.send(layers.fill_constant(shape=[1], dtype="int64", value=7 + k))'
        echo 'ch.close()'
        if [ "$taken" = 0 ]; then # drained before the loop: the body never runs
            echo 'ch.recv()'
            echo 'ch.recv()'
        fi
        if [ "$mode" = rt ]; then
            echo 'for v in ch:'
        else
            echo "for _k in range($K):"
            echo '    v = ch.recv()'
        fi
        body "$kind" "    " ;;
    select)
        echo 'a = fluid.make_chan(dtype="int64", shape=[1], capacity=1)'
        echo 'b = fluid.make_chan(dtype="int64", shape=[1], capacity=1)'
        echo 'a.send(layers.fill_constant(shape=[1], dtype="int64", value=7))'
        if [ "$mode" = rt ]; then
            echo 'select:'
            if [ "$taken" = 1 ]; then
                echo '    case v = a.recv():'
                body "$kind" "        "
                echo '    case w = b.recv():'
                echo '        pass'
            else
                echo '    case w = a.recv():'
                echo '        pass'
                echo '    case v = b.recv():'
                body "$kind" "        "
            fi
        elif [ "$taken" = 1 ]; then
            echo 'v = a.recv()'
            body "$kind" ""
        else
            echo 'w = a.recv()'
        fi ;;
    parallel_for) # names stay inside the body; its twin is a function's body
        if [ "$mode" = rt ]; then
            echo "c = layers.fill_constant(shape=[1], dtype=\"bool\", value=$T)"
            echo 'parallel_for j in range(1):'
            cond=c
        else
            echo 'def _body(x, y, z):'
            cond=$T
        fi
        echo "    if $cond:"
        body "$kind" "        "
        echo '    layers.Print(x, message="px")'
        echo '    layers.Print(y, message="py")'
        [ "$mode" = ct ] && echo '_body(x, y, z)' ;;
    esac
    epilogue
}

pass=0 fail=0
for con in if_then if_else while while_if for_chan select parallel_for; do
    kinds="outside op nothing swap alias twice chan"
    case $con in for_chan | select) kinds="$kinds elem" ;; esac
    for kind in $kinds; do
        for taken in 1 0; do
            name=${con}_${kind}_$taken
            for mode in rt ct; do
                program "$con" "$kind" "$taken" "$mode" >"$tmp/$name.$mode.fl"
                timeout 10 "$FLRUN" "$tmp/$name.$mode.fl" >"$tmp/$name.$mode.out" 2>"$tmp/$name.$mode.err"
                echo $? >"$tmp/$name.$mode.rc"
                sed -n 's/^\([^ ]*\) [^ ]* \[[^]]*\] [a-z0-9]*: *\(.*\)$/\1 \2/p' "$tmp/$name.$mode.out" >"$tmp/$name.$mode.got"
            done
            why=""
            [ "$(cat "$tmp/$name.ct.rc")" = 0 ] || why="the compile-time twin failed: $(head -c 300 "$tmp/$name.ct.err")"
            [ "$(cat "$tmp/$name.rt.rc")" = 0 ] || why="$why; exit $(cat "$tmp/$name.rt.rc"): $(head -c 300 "$tmp/$name.rt.err")"
            [ -s "$tmp/$name.ct.got" ] || why="$why; the twin printed nothing"
            cmp -s "$tmp/$name.rt.got" "$tmp/$name.ct.got" ||
                why="$why; printed [$(tr '\n' '|' <"$tmp/$name.rt.got")] expected [$(tr '\n' '|' <"$tmp/$name.ct.got")]"
            if [ -z "$why" ]; then
                pass=$((pass + 1))
            else
                fail=$((fail + 1))
                echo "FAIL $name: $why"
            fi
        done
    done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
