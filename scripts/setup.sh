#!/bin/sh
# Installs the Debian packages fluidc needs (skips apt-get when everything is already there).
set -eu
PKGS="build-essential cmake pkg-config flex bison protobuf-c-compiler libprotobuf-c-dev \
libopenmpi-dev openmpi-bin libopenblas-dev libcunit1-dev libdnnl-dev zlib1g-dev libsnappy-dev graphviz time protobuf-compiler \
python3-numpy iproute2 procps bc chromium dataset-fashion-mnist zip unzip"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "setup: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
