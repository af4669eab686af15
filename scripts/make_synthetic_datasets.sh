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
#   DIR/conll05st/conll05st-tests.tar.gz, wordDict.txt, verbDict.txt, targetDict.txt, emb
#       conll05st-release/test.wsj/{words,props}/test.wsj.{words,props}.gz: 600 sentences "A0 verb
#       A1 [AM-LOC] [while A0 verb A1]" (a Park-Miller generator) with their bracketed role
#       columns, one or two predicates each; the dicts of its words ('<unk>' first), verbs and
#       tags; emb: a 16-byte header and 32 float32 values in {-1, -0.5, 0.5, 1} per word
#   DIR/wmt14/wmt14.tgz                wmt14/{src,trg}.dict ('<s>', '<e>', '<unk>', then 40 words
#       each) and wmt14/{train/train,test/test,gen/gen}: pairs of 3 to 8 source words "sK" and
#       their target words "tK" in the same order (a word for word code), a few words beyond
#       the dicts
#   DIR/wmt16/wmt16.tar.gz             wmt16/{train,test,val}: pairs "eK ...\tdK ..." likewise,
#       the words drawn unevenly (low K more often) so the built dicts' order means something
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
# srl_corpus N SEED WORDS PROPS: N sentences as the words file and the props file (a word, and its
# role columns, a line; a blank line after each sentence)
srl_corpus() {
    awk -v count="$1" -v seed="$2" -v wf="$3" -v pf="$4" '
    function rnd(n) { x = (x * 16807) % 2147483647; return x % n }
    function span(tag, w1, w2) { # a role of two words: its words and bracketed cells
        nw++; W[nw] = w1; C[nw] = "(" tag "*"; nw++; W[nw] = w2; C[nw] = "*)"
    }
    BEGIN {
        split("the a this that", det, " ")
        split("man woman dog cat company bank market child teacher city", noun, " ")
        split("bought sold saw liked found took gave made", verb, " ")
        split("bought sold saw liked found took gave made", lemma, " ")
        split("in at near", prep, " ")
        x = seed
        for (s = 0; s < count; s++) {
            nw = 0; delete W; delete C
            span("A0", det[1 + rnd(4)], noun[1 + rnd(10)]); a0 = nw
            v = 1 + rnd(8); nw++; W[nw] = verb[v]; C[nw] = "(V*)"; v1 = nw; l1 = lemma[v]
            span("A1", det[1 + rnd(4)], noun[1 + rnd(10)])
            if (rnd(2)) { nw++; W[nw] = prep[1 + rnd(3)]; C[nw] = "(AM-LOC*"; span("X", det[1 + rnd(4)], noun[1 + rnd(10)]); C[nw - 1] = "*" }
            end1 = nw; two = rnd(3) == 0
            if (two) {
                nw++; W[nw] = "while"; C[nw] = "*"
                span("A0", det[1 + rnd(4)], noun[1 + rnd(10)])
                v = 1 + rnd(8); nw++; W[nw] = verb[v]; C[nw] = "(V*)"; v2 = nw; l2 = lemma[v]
                span("A1", det[1 + rnd(4)], noun[1 + rnd(10)])
            }
            if (end1 > v1 + 2) C[end1] = "*)" # the location span closes at its last word
            for (i = 1; i <= nw; i++) {
                print W[i] > wf
                c0 = i == v1 ? l1 : (two && i == v2 ? l2 : "-")
                c1 = i <= end1 ? C[i] : "*"
                line = c0 " " c1
                if (two) line = line " " (i > end1 + 1 ? C[i] : "*")
                print line > pf
            }
            print "" > wf; print "" > pf
        }
    }'
}

if [ ! -e "$dir/conll05st/conll05st-tests.tar.gz" ]; then
    c=$tmp/conll05st-release/test.wsj
    mkdir -p "$c/words" "$c/props" "$dir/conll05st"
    srl_corpus 600 7 "$c/words/test.wsj.words" "$c/props/test.wsj.props"
    gzip -n "$c/words/test.wsj.words" "$c/props/test.wsj.props"
    (cd "$tmp" && tar --format=ustar --sort=name --owner=0 --group=0 --mtime=@0 -czf conll05.tgz conll05st-release)
    { printf '<unk>\nbos\neos\nwhile\nin\nat\nnear\n'
      for w in the a this that man woman dog cat company bank market child teacher city bought sold saw liked \
               found took gave made; do echo "$w"; done; } > "$tmp/wordDict.txt"
    printf 'bought\nsold\nsaw\nliked\nfound\ntook\ngave\nmade\n' > "$tmp/verbDict.txt"
    printf 'B-A0\nI-A0\nB-A1\nI-A1\nB-AM-LOC\nI-AM-LOC\nB-V\nI-V\nO\n' > "$tmp/targetDict.txt"
    # emb: Paddle's parameter header (16 bytes), then 32 float32 values a word, little-endian
    awk -v n="$(wc -l < "$tmp/wordDict.txt")" 'BEGIN {
        split("\\000\\000\\200\\277 \\000\\000\\000\\277 \\000\\000\\000\\077 \\000\\000\\200\\077", v, " ")
        printf "\\000\\000\\000\\000\\004\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\n"
        x = 3
        for (i = 0; i < n * 32; i++) { x = (x * 16807) % 2147483647; printf "%s", v[1 + x % 4]; if (i % 32 == 31) printf "\n" }
    }' | while IFS= read -r line; do printf "$line"; done > "$tmp/emb"
    mv "$tmp/wordDict.txt" "$tmp/verbDict.txt" "$tmp/targetDict.txt" "$tmp/emb" "$dir/conll05st/"
    mv "$tmp/conll05.tgz" "$dir/conll05st/conll05st-tests.tar.gz"
fi
# mt_pairs N SEED SRC TRG WORDS: N lines "SRC-words\tTRG-words", word K of the source side being
# SRCK and TRGK its translation, K from 0 to WORDS + 1 (the last two beyond dicts of WORDS)
mt_pairs() {
    awk -v count="$1" -v seed="$2" -v s="$3" -v t="$4" -v words="$5" 'BEGIN {
        x = seed
        for (i = 0; i < count; i++) {
            x = (x * 16807) % 2147483647; len = 3 + x % 6
            a = ""; b = ""
            for (k = 0; k < len; k++) {
                x = (x * 16807) % 2147483647; r = x % 1000
                w = r < 10 ? words + r % 2 : int(words * (r / 1000) * (r / 1000))
                a = a (k ? " " : "") s w; b = b (k ? " " : "") t w
            }
            print a "\t" b
        }
    }'
}

if [ ! -e "$dir/wmt14/wmt14.tgz" ]; then
    mkdir -p "$tmp/wmt14/train" "$tmp/wmt14/test" "$tmp/wmt14/gen" "$dir/wmt14"
    { printf '<s>\n<e>\n<unk>\n'; awk 'BEGIN { for (k = 0; k < 40; k++) print "s" k }'; } > "$tmp/wmt14/src.dict"
    { printf '<s>\n<e>\n<unk>\n'; awk 'BEGIN { for (k = 0; k < 40; k++) print "t" k }'; } > "$tmp/wmt14/trg.dict"
    mt_pairs 2000 5 s t 40 > "$tmp/wmt14/train/train"
    mt_pairs 200 9 s t 40 > "$tmp/wmt14/test/test"
    mt_pairs 20 13 s t 40 > "$tmp/wmt14/gen/gen"
    (cd "$tmp" && tar --format=ustar --sort=name --owner=0 --group=0 --mtime=@0 -czf wmt14.tgz wmt14)
    mv "$tmp/wmt14.tgz" "$dir/wmt14/wmt14.tgz"
fi
if [ ! -e "$dir/wmt16/wmt16.tar.gz" ]; then
    mkdir -p "$tmp/wmt16" "$dir/wmt16"
    mt_pairs 2000 17 e d 40 > "$tmp/wmt16/train"
    mt_pairs 200 19 e d 40 > "$tmp/wmt16/test"
    mt_pairs 200 23 e d 40 > "$tmp/wmt16/val"
    (cd "$tmp" && tar --format=ustar --sort=name --owner=0 --group=0 --mtime=@0 -czf wmt16.tgz wmt16)
    mv "$tmp/wmt16.tgz" "$dir/wmt16/wmt16.tar.gz"
fi
echo "make_synthetic_datasets.sh: $dir holds imikolov/, imdb/, conll05st/, wmt14/ and wmt16/"
