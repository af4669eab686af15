#!/bin/sh
# The main job: install what fluidc needs, build it, compile the UCI housing example and show the
# program it became.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "== flc build examples/fit_a_line.fl"
build/tools/flc build examples/fit_a_line.fl -o build/fit_a_line.flp
echo "== flc show build/fit_a_line.flp"
build/tools/flc show build/fit_a_line.flp
