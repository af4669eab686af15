#!/bin/sh
# The main job: install what fluidc needs, build it, compile the UCI housing example, train it,
# and transpile it into a distributed plan.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
flc=build/tools/flc
flrun=build/tools/flrun
echo "== flc build examples/fit_a_line.fl -o build/fit_a_line.flp"
$flc build examples/fit_a_line.fl -o build/fit_a_line.flp
echo "== flrun build/fit_a_line.flp   (UCI housing, 50 epochs of SGD)"
$flrun build/fit_a_line.flp
echo "== flc transpile build/fit_a_line.flp --pservers 2 --trainers 2 -o build/fit_a_line.plan"
$flc transpile build/fit_a_line.flp --pservers 2 --trainers 2 -o build/fit_a_line.plan
echo "== mpirun -np 4 flrun build/fit_a_line.plan   (2 trainers, 2 parameter servers)"
mpirun --allow-run-as-root --oversubscribe -np 4 $flrun build/fit_a_line.plan
