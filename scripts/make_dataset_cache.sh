#!/bin/sh
# make_dataset_cache.sh DIR: a cache of paddle.dataset's files, in Paddle's formats, that fluidc's
# paddle.dataset readers read (docs/driver.md, "Data"): FLUIDC_DATA_HOME=DIR, or DIR =
# ~/.cache/paddle/dataset, Paddle's own cache folder. Nothing is downloaded:
#   DIR/mnist/        the gzip idx files of Fashion-MNIST (MNIST's format: 28x28 images, 10
#                     classes), from Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist)
#   DIR/uci_housing/  housing.data, from examples/data/boston_house_prices.csv (the same 506 rows)
# A file already in DIR is left as it is.
set -eu
if [ $# -ne 1 ]; then
    echo "usage: scripts/make_dataset_cache.sh DIR" >&2
    exit 2
fi
dir=$1
here=$(cd "$(dirname "$0")/.." && pwd)
fashion=${FL_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

mkdir -p "$dir/mnist" "$dir/uci_housing"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -e "$dir/mnist/$f" ] && continue
    if [ ! -f "$fashion/$f" ]; then
        echo "make_dataset_cache.sh: '$fashion/$f' is missing: apt-get install dataset-fashion-mnist" >&2
        exit 1
    fi
    cp "$fashion/$f" "$dir/mnist/$f"
done

# housing.data: the csv's rows (after its two header lines), 14 numbers each, blank-separated
if [ ! -e "$dir/uci_housing/housing.data" ]; then
    awk -F, 'NR > 2 { line = ""; for (i = 1; i <= NF; i++) line = line " " $i; print line }' \
        "$here/examples/data/boston_house_prices.csv" > "$dir/uci_housing/housing.data.tmp"
    mv "$dir/uci_housing/housing.data.tmp" "$dir/uci_housing/housing.data"
fi
echo "make_dataset_cache.sh: $dir holds mnist/ and uci_housing/"
