#!/bin/sh
# test_install.sh: installs the build into a staged prefix and uses it as a newcomer would,
# away from the source and build trees:
#   - the installed flc and flrun print the package's version and compile against the INSTALLED
#     stdlib (a module added to it alone is found; the build-tree flc does not find it;
#     $FLUIDC_STDLIB still overrides);
#   - examples/embed/predict_threads.c, copied out of tree, is built twice against the installed
#     package: a tiny CMake project with find_package(fluidc) and target fluidc::fluidc, and
#     cc with `pkg-config --cflags --libs fluidc`; both run on a program that the installed flc
#     compiled; install_train.c (runtime/train/train.h: the trainer, MPI, zlib) is built the same
#     two ways and trains examples/fit_a_line.fl for one epoch;
#   - nothing installed names the source or build tree.
# usage: test_install.sh SOURCE_DIR BUILD_DIR C_COMPILER LIBDIR   (LIBDIR: CMAKE_INSTALL_LIBDIR)
set -eu
src=$1 build=$2 cc=$3 libdir=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=$tmp/prefix
fail() { echo "test_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$P" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
for f in bin/flc bin/flrun share/fluidc/stdlib/fluid/__init__.fl share/fluidc/stdlib/fluid/layers/__init__.fl \
         share/fluidc/stdlib/fluid/layers/_nn.fl share/fluidc/stdlib/fluid/layers/learning_rate_scheduler.fl \
         include/fluidc/runtime/api.h include/fluidc/runtime/tensor.h include/fluidc/base/base.h \
         "$libdir/libfluidc.a" "$libdir/cmake/fluidc/fluidcConfig.cmake" "$libdir/pkgconfig/fluidc.pc"; do
    [ -e "$P/$f" ] || fail "not installed: $f"
done
if grep -rlF -e "$src" -e "$build" "$P/include" "$P/$libdir/cmake" "$P/$libdir/pkgconfig"; then
    fail "installed files above name the source or build tree"
fi
export PKG_CONFIG_PATH="$P/$libdir/pkgconfig"
version=$(pkg-config --modversion fluidc)
for t in flc flrun; do
    out=$("$P/bin/$t" --version)
    case $out in
        "$t (fluidc) $version, IR format "[0-9]*) ;;
        *) fail "$t --version: '$out', expected the package's version $version" ;;
    esac
done

# the installed stdlib: a module only it holds
mkdir "$tmp/work"
cd "$tmp/work"
echo 'x = 1' >"$P/share/fluidc/stdlib/fluid/installed_only.fl"
echo 'from fluid import installed_only' >probe.fl
"$P/bin/flc" check probe.fl || fail "the installed flc does not use the installed stdlib"
"$P/bin/flrun" -q probe.fl || fail "the installed flrun does not use the installed stdlib"
if "$build/tools/flc" check probe.fl 2>/dev/null; then fail "the probe does not tell the stdlibs apart"; fi
if FLUIDC_STDLIB="$src/stdlib" "$P/bin/flc" check probe.fl 2>/dev/null; then
    fail "FLUIDC_STDLIB does not override the installed stdlib"
fi

cp "$src/examples/embed/identity.fl" "$src/examples/embed/predict_threads.c" "$src/tests/e2e/install_train.c" .
"$P/bin/flc" build identity.fl -o identity.flp
"$P/bin/flc" build "$src/examples/fit_a_line.fl" -o fit_a_line.flp
check_runs() { # $1: directory of the two programs
    out=$(OPENBLAS_NUM_THREADS=1 "$1/predict_threads" identity.flp) || fail "$1/predict_threads failed: $out"
    [ "$out" = "100 rounds x 10 threads x 5 calls: every thread got its own value back" ] ||
        fail "$1/predict_threads: unexpected output '$out'"
    out=$(OPENBLAS_NUM_THREADS=1 "$1/install_train" fit_a_line.flp 1) || fail "$1/install_train failed: $out"
    case $out in
        "epoch 1/1 train loss "[0-9]*) ;;
        *) fail "$1/install_train: unexpected output '$out'" ;;
    esac
}

# 1. CMake: find_package(fluidc)
mkdir cm
cat >cm/CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.20)
project(embed_out_of_tree C)
find_package(fluidc 0.1 REQUIRED)
add_executable(predict_threads ../predict_threads.c)
target_link_libraries(predict_threads PRIVATE fluidc::fluidc)
add_executable(install_train ../install_train.c)
target_link_libraries(install_train PRIVATE fluidc::fluidc)
CM
cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    >"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "configuring against find_package(fluidc) failed"; }
cmake --build cm/build >>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "building against fluidc::fluidc failed"; }
check_runs cm/build

# 2. pkg-config
mkdir pc
# shellcheck disable=SC2046 # the flags are words
"$cc" -o pc/predict_threads predict_threads.c $(pkg-config --cflags --libs fluidc) ||
    fail "cc predict_threads.c \$(pkg-config --cflags --libs fluidc) failed"
# shellcheck disable=SC2046
"$cc" -o pc/install_train install_train.c $(pkg-config --cflags --libs fluidc) ||
    fail "cc install_train.c \$(pkg-config --cflags --libs fluidc) failed"
check_runs pc
echo "test_install: installed into a staged prefix; built out of tree with find_package(fluidc) and pkg-config; both ran"
