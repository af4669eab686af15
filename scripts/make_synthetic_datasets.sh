#!/bin/sh
# make_synthetic_datasets.sh DIR: small made-up datasets in the formats of Paddle's downloads, for
# tests (Debian packages none of these datasets): point FLUIDC_DATA_HOME at DIR and the
# paddle.dataset readers read them as they read Paddle's files (docs/data.md). Nothing in them is
# real text; each is built to be learnable, without random numbers (the same files everywhere):
#   DIR/imikolov/simple-examples.tgz   ./simple-examples/data/ptb.{train,valid,test}.txt: lines of
#       20 words; every fifth word is one of 300 rare words "r0".."r299" taken in turn (each seen
#       55 times or more, above build_dict's default cutoff of 50), the others cycle through 10
#       common words, so the next word's distribution is far from uniform; a few "<unk>" words
#   DIR/imdb/aclImdb_v1.tar.gz         aclImdb/{train,test}/{pos,neg}/I_R.txt (1000 train and 200
#       test reviews of each label, R the rating) and aclImdb/imdb.vocab: reviews of 12 to 35 words
#       drawn (a Park-Miller generator, integer arithmetic) from 40 neutral words, with one word in
#       five from the label's 10 words ("great", ... or "awful", ...) and one in thirty from the
#       other label's, capitals, punctuation and "<br />" as Paddle's tokenizer meets them, and a
#       rare word per review (under word_dict()'s cutoff of 150: '<unk>')
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
# reviews DIR COUNT LABEL SEED: COUNT reviews of LABEL (pos or neg) as DIR/I_R.txt
reviews() {
    awk -v dir="$1" -v count="$2" -v label="$3" -v seed="$4" 'BEGIN {
        n = split("the a movie film story plot actor scene it was is and of to in this that with " \
                  "for as on but his her they one all at by an be from have time who just like " \
                  "character ending music end", neutral, " ")
        split("great excellent wonderful loved best brilliant beautiful superb enjoyed perfect", good, " ")
        split("awful terrible boring worst waste bad poor stupid dull horrible", bad, " ")
        x = seed
        for (i = 0; i < count; i++) {
            x = (x * 16807) % 2147483647; len = 12 + x % 24
            x = (x * 16807) % 2147483647; rating = label == "pos" ? 7 + x % 4 : 1 + x % 4
            text = ""
            for (k = 0; k < len; k++) {
                x = (x * 16807) % 2147483647; r = x % 60
                if (r < 12) w = (label == "pos" ? good[1 + x % 10] : bad[1 + x % 10])
                else if (r < 14) w = (label == "pos" ? bad[1 + x % 10] : good[1 + x % 10])
                else w = neutral[1 + x % n]
                if (k == 0) w = toupper(substr(w, 1, 1)) substr(w, 2)
                if (k == 5) w = w "!"
                if (k == 8) w = w ",<br /><br />"
                text = text (k ? " " : "") w
            }
            text = text " rare" label i "."
            file = dir "/" i "_" rating ".txt"
            printf "%s", text > file
            close(file)
        }
    }'
}

if [ ! -e "$dir/imdb/aclImdb_v1.tar.gz" ]; then
    for s in train test; do
        for l in pos neg; do mkdir -p "$tmp/aclImdb/$s/$l"; done
    done
    reviews "$tmp/aclImdb/train/pos" 1000 pos 11
    reviews "$tmp/aclImdb/train/neg" 1000 neg 23
    reviews "$tmp/aclImdb/test/pos" 200 pos 37
    reviews "$tmp/aclImdb/test/neg" 200 neg 41
    printf 'the\na\nmovie\n' > "$tmp/aclImdb/imdb.vocab"
    mkdir -p "$dir/imdb"
    (cd "$tmp" && tar --format=ustar --sort=name --owner=0 --group=0 --mtime=@0 -czf imdb.tgz aclImdb)
    mv "$tmp/imdb.tgz" "$dir/imdb/aclImdb_v1.tar.gz"
fi
echo "make_synthetic_datasets.sh: $dir holds imikolov/ and imdb/"
