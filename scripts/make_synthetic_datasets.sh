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
#   DIR/cifar/cifar-10-python.tar.gz   cifar-10-batches-py/data_batch_{1..5} (200 images each),
#       test_batch (200) and batches.meta; DIR/cifar/cifar-100-python.tar.gz: cifar-100-python/train
#       (500), test (100) and meta: Python 2 pickles (protocol 2, as the real files) of dicts whose
#       'data' is a numpy uint8 array of rows of 3072 pixels and whose 'labels' (CIFAR-100:
#       'fine_labels' and 'coarse_labels') a list; each class has its own colour and stripes,
#       under noise (a Park-Miller generator), so a small net tells them apart
#   DIR/movielens/ml-1m.zip            ml-1m/users.dat (60 users), movies.dat (120 movies, titles of
#       2 to 4 words and a year, Latin-1, 1 to 3 of MovieLens's 18 genres) and ratings.dat (6000
#       ratings, 1 to 5, from the user's and the movie's group), '::'-separated as MovieLens's
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
# cifar_batch FILE COUNT CLASSES SEED KEY NAME: a pickled batch of COUNT images of CLASSES classes,
# its labels under KEY ('labels' or 'fine_labels', the latter with 'coarse_labels' too)
cifar_batch() {
    LC_ALL=C awk -v file="$1" -v count="$2" -v classes="$3" -v seed="$4" -v key="$5" -v name="$6" '
    function byte(v) { printf "%c", v > file }
    function int4(v) { byte(v % 256); byte(int(v / 256) % 256); byte(int(v / 65536) % 256); byte(int(v / 16777216)) }
    function sstr(s) { byte(85); byte(length(s)); printf "%s", s > file }
    function put() { byte(113); byte(++memo) }
    function small(v) { if (v < 256) { byte(75); byte(v) } else { byte(77); byte(v % 256); byte(int(v / 256)) } }
    function ints(a, n,    i) { byte(93); put(); for (i = 0; i < n; i++) { if (i % 1000 == 0) byte(40); small(a[i]); if (i % 1000 == 999 || i == n - 1) byte(101) } }
    function rnd() { x = (x * 16807) % 2147483647; return x }
    BEGIN {
        x = seed
        for (i = 0; i < count; i++) label[i] = rnd() % classes
        printf "%c%c}", 128, 2 > file; put(); byte(40)
        sstr("data"); put()
        printf "cnumpy.core.multiarray\n_reconstruct\n" > file; put()
        printf "cnumpy\nndarray\n" > file; put()
        small(0); byte(133); put(); sstr("b"); put(); byte(135); put(); byte(82); put()
        byte(40); small(1); small(count); small(3072); byte(134); put()
        printf "cnumpy\ndtype\n" > file; put(); sstr("u1"); put(); small(0); small(1); byte(135); put(); byte(82); put()
        byte(40); small(3); sstr("|"); put(); printf "NNN" > file
        byte(74); int4(4294967295); byte(74); int4(4294967295); small(0); byte(116); put(); byte(98)
        byte(137); byte(84); int4(count * 3072)
        for (i = 0; i < count; i++) {
            k = label[i]; ci = classes == 10 ? k : k % 50; horiz = classes == 10 ? k % 2 : int(k / 50)
            for (c = 0; c < 3; c++) {
                off = classes == 10 ? (int(ci / 3 ^ c) % 3 - 1) * 45 : (int(ci / 4 ^ c) % 4) * 30 - 45
                for (y = 0; y < 32; y++) for (z = 0; z < 32; z++) {
                    stripe = int((horiz ? y : z) / 4) % 2 ? 25 : -25
                    v = 128 + off + stripe + rnd() % 61 - 30
                    byte(v < 0 ? 0 : v > 255 ? 255 : v)
                }
            }
        }
        put(); byte(116); put(); byte(98)
        sstr(key); put(); ints(label, count)
        if (key == "fine_labels") { for (i = 0; i < count; i++) coarse[i] = int(label[i] / 5); sstr("coarse_labels"); put(); ints(coarse, count) }
        sstr("batch_label"); put(); sstr(name); put()
        byte(117); byte(46)
    }'
}
# cifar_meta FILE KEY WORD N: a pickled dict of a list of N names WORD0.. under KEY
cifar_meta() {
    LC_ALL=C awk -v file="$1" -v key="$2" -v word="$3" -v n="$4" 'BEGIN {
        printf "%c%c}(U%c%s](", 128, 2, length(key), key > file
        for (i = 0; i < n; i++) { s = word i; printf "U%c%s", length(s), s > file }
        printf "eu." > file
    }'
}

if [ ! -e "$dir/cifar/cifar-10-python.tar.gz" ]; then
    mkdir -p "$tmp/cifar-10-batches-py" "$dir/cifar"
    for i in 1 2 3 4 5; do
        cifar_batch "$tmp/cifar-10-batches-py/data_batch_$i" 200 10 $((i * 17)) labels "training batch $i of 5"
    done
    cifar_batch "$tmp/cifar-10-batches-py/test_batch" 200 10 101 labels "testing batch 1 of 1"
    cifar_meta "$tmp/cifar-10-batches-py/batches.meta" label_names class 10
    (cd "$tmp" && tar --format=ustar --owner=0 --group=0 --mtime=@0 -czf cifar10.tgz cifar-10-batches-py/data_batch_1 \
        cifar-10-batches-py/data_batch_2 cifar-10-batches-py/data_batch_3 cifar-10-batches-py/data_batch_4 \
        cifar-10-batches-py/data_batch_5 cifar-10-batches-py/test_batch cifar-10-batches-py/batches.meta)
    mv "$tmp/cifar10.tgz" "$dir/cifar/cifar-10-python.tar.gz"
fi
if [ ! -e "$dir/cifar/cifar-100-python.tar.gz" ]; then
    mkdir -p "$tmp/cifar-100-python" "$dir/cifar"
    cifar_batch "$tmp/cifar-100-python/train" 500 100 7 fine_labels "training batch 1 of 1"
    cifar_batch "$tmp/cifar-100-python/test" 100 100 13 fine_labels "testing batch 1 of 1"
    cifar_meta "$tmp/cifar-100-python/meta" fine_label_names fine 100
    (cd "$tmp" && tar --format=ustar --owner=0 --group=0 --mtime=@0 -czf cifar100.tgz cifar-100-python/train \
        cifar-100-python/test cifar-100-python/meta)
    mv "$tmp/cifar100.tgz" "$dir/cifar/cifar-100-python.tar.gz"
fi
if [ ! -e "$dir/movielens/ml-1m.zip" ]; then
    mkdir -p "$tmp/ml-1m" "$dir/movielens"
    LC_ALL=C awk -v d="$tmp/ml-1m" 'BEGIN {
        split("1 18 25 35 45 50 56", ages, " ")
        for (u = 1; u <= 60; u++)
            printf "%d::%s::%d::%d::%05d\n", u, u % 3 ? "M" : "F", ages[1 + u % 7], u % 21, 10000 + u * 7 > (d "/users.dat")
        ng = split("Action Adventure Animation Children'"'"'s Comedy Crime Documentary Drama Fantasy Film-Noir " \
                   "Horror Musical Mystery Romance Sci-Fi Thriller War Western", genres, " ")
        nw = split("The Night Day Story Love War Man Woman City River Dark Last First Little Big Lost Return King " \
                   "Dream Star Secret House Road Summer Winter Game", words, " ")
        for (m = 1; m <= 120; m++) {
            t = ""
            for (k = 0; k < 2 + m % 3; k++) t = t (k ? " " : "") words[1 + (m * 7 + k * 11) % nw]
            if (m % 17 == 0) t = t " Caf" sprintf("%c", 233)
            g = genres[1 + m % ng]
            for (k = 1; k <= m % 3; k++) g = g "|" genres[1 + (m * 5 + k * 3) % ng]
            printf "%d::%s (%d)::%s\n", m, t, 1950 + m % 50, g > (d "/movies.dat")
        }
        x = 7
        for (i = 0; i < 6000; i++) {
            x = (x * 16807) % 2147483647; u = 1 + x % 60
            x = (x * 16807) % 2147483647; m = 1 + x % 120
            x = (x * 16807) % 2147483647
            r = 1 + ((u % 5) * (m % 5) + (x % 7 == 0)) % 5
            printf "%d::%d::%d::%d\n", u, m, r, 978300000 + i > (d "/ratings.dat")
        }
    }'
    TZ=UTC touch -t 198001010000 "$tmp/ml-1m" "$tmp/ml-1m/users.dat" "$tmp/ml-1m/movies.dat" "$tmp/ml-1m/ratings.dat"
    (cd "$tmp" && TZ=UTC zip -q -X ml-1m.zip ml-1m/movies.dat ml-1m/users.dat ml-1m/ratings.dat)
    mv "$tmp/ml-1m.zip" "$dir/movielens/ml-1m.zip"
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
echo "make_synthetic_datasets.sh: $dir holds imikolov/, imdb/, cifar/, movielens/, conll05st/, wmt14/ and wmt16/"
