#!/bin/sh
# test_py_install.sh BUILD_DIR: cmake --install into a staged prefix P; the installed package
# (P/lib/python3/dist-packages/fluidc) imports with PYTHONPATH alone, away from the source and
# build trees, and runs a program that the installed flc compiled; its Python files name no tree.
set -eu
build=$1
py=/usr/bin/python3
if ! [ -x "$py" ] || ! "$py" -c 'import numpy' >/dev/null 2>&1; then
    echo "skipped: /usr/bin/python3 with numpy not found (Debian package python3-numpy)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=$tmp/prefix
fail() { echo "test_py_install: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$P" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
pkg=$P/lib/python3/dist-packages/fluidc
for f in __init__.py libfluidc_py.so; do
    [ -f "$pkg/$f" ] || fail "not installed: lib/python3/dist-packages/fluidc/$f"
done
# (the library itself holds source paths in its debug information and assertions, as flrun does)
if grep -lF "$build" "$pkg"/*.py; then fail "installed files above name the build tree"; fi
cd "$tmp"
cat >model.fl <<'FL'
from fluid import layers
x = layers.data(name="x", shape=[2], dtype="float32")
y = layers.scale(x, scale=3.0)
FL
"$P/bin/flc" build model.fl -o model.flp
out=$(env -u FLUIDC_PY_LIBRARY PYTHONPATH="$P/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1 "$py" -c '
import numpy as np, fluidc
exe = fluidc.Executor(fluidc.load("model.flp"))
y, = exe.run(feed={"x": np.array([[1, 2]], np.float32)}, fetch_list=["scale_0.tmp_0"])
print(fluidc.__file__, y.tolist())
') || fail "the installed package failed: $out"
[ "$out" = "$pkg/__init__.py [[3.0, 6.0]]" ] || fail "unexpected output '$out'"
echo "installed in lib/python3/dist-packages: $out"
