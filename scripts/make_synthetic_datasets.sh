#!/bin/sh
# make_synthetic_datasets.sh DIR: small made-up datasets in the formats of Paddle's downloads, for
# tests (Debian packages none of these datasets): point FLUIDC_DATA_HOME at DIR and the
# paddle.dataset readers read them as they read Paddle's files (docs/data.md). Nothing in them is
# real text; each is built to be learnable, without random numbers (the same files everywhere):
#   DIR/imikolov/simple-examples.tgz   ./simple-examples/data/ptb.{train,valid,test}.txt: lines of
#       20 words; every fifth word is one of 300 rare words "r0".."r299" taken in turn (each seen
#       55 times or more, above build_dict's default cutoff of 50), the others cycle through 10
#       common words, so the next word's distribution is far from uniform; a few "<unk>" words
# A file already in DIR is left as it is.
set -eu
if [ $# -ne 1 ]; then
    echo "usage: scripts/make_synthetic_datasets.sh DIR" >&2
    exit 2
fi
dir=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ptb_text LINES OFFSET: LINES lines of 20 words; OFFSET shifts where the cycles start
ptb_text() {
    awk -v lines="$1" -v off="$2" 'BEGIN {
        split("the of and to in a is that for it", common, " ")
        k = off
        for (l = 0; l < lines; l++) {
            line = ""
            for (i = 0; i < 20; i++) {
                if (k % 5 == 4) w = "r" (int(k / 5) % 300)
                else if (k % 97 == 0) w = "<unk>"
                else w = common[1 + (k * 7) % 10]
                line = line (i ? " " : "") w
                k++
            }
            print " " line " "
        }
    }'
}

if [ ! -e "$dir/imikolov/simple-examples.tgz" ]; then
    mkdir -p "$tmp/simple-examples/data" "$dir/imikolov"
    ptb_text 4125 0 > "$tmp/simple-examples/data/ptb.train.txt"
    ptb_text 200 7 > "$tmp/simple-examples/data/ptb.valid.txt"
    ptb_text 200 13 > "$tmp/simple-examples/data/ptb.test.txt"
    (cd "$tmp" && tar --format=ustar --owner=0 --group=0 --mtime=@0 -czf imikolov.tgz ./simple-examples)
    mv "$tmp/imikolov.tgz" "$dir/imikolov/simple-examples.tgz"
fi
echo "make_synthetic_datasets.sh: $dir holds imikolov/"
