#!/usr/bin/env python3
"""Synthetic stand-ins for the data sets of examples/fluid/ that the project does not ship.

Each set has the shapes and dtypes of the data the Fluid program reads, and a signal a model can
learn (so a falling loss means the program trains). Deterministic: the same files on every run.
Standard library only.  Usage:  python3 gen_fluid_data.py [OUTDIR]   (default: this directory)

  imikolov_5gram.csv    firstw secondw thirdw forthw nextw: int word ids < 2073 (the size of
                        imikolov's dictionary in the word2vec chapter). The text is a Markov chain:
                        the next word follows the previous one through a fixed random permutation
                        with probability 0.75, else it is a random word among the 200 most frequent.
  skipgram.csv.gz       center, context, then the context word's path in a Huffman tree over the
                        context words' counts: 16 inner-node ids (-1 past the path) and 16 bits,
                        for hsigmoid's custom tree. The pairs are the (3rd word, 4th word) and (3rd
                        word, 2nd word) of imikolov_5gram.csv's rows: the Markov chain makes the
                        next word predictable from the center 3 times in 4.
  cifar_synth.csv.gz    3*32*32 pixel values 0..15 (scale by 1/15), then a label 0..9: each class
                        brightens one of 10 fixed 8x8 patches of one channel, over uniform noise.
  wmt_synth.csv.gz      the padded inputs of the Transformer (max length 16, 8 heads): src_word,
                        src_pos, src_slf_attn_bias, trg_word, trg_pos, trg_slf_attn_bias,
                        trg_src_attn_bias, lbl_word, lbl_weight, in that order (16 + 16 + 2048 + 16 +
                        16 + 2048 + 2048 + 16 + 16 columns). The task copies the source: the target is
                        <s> + source, the labels are source + <e> (ids: 0 <s>, 1 <e>, 2 <unk>, words
                        3..63 of a vocabulary of 10000); sentences of 4..15 words, padded with <e>.
"""
import gzip
import heapq
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def write(name, rows):
    path = os.path.join(OUT, name)
    text = "".join(",".join(str(v) for v in r) + "\n" for r in rows).encode()
    if name.endswith(".gz"):
        text = gzip.compress(text, mtime=0)  # no time stamp: the same bytes on every run
    with open(path, "wb") as f:
        f.write(text)


def imikolov(n_rows=4000, dict_size=2073, seed=1):
    rnd = random.Random(seed)
    perm = list(range(dict_size))
    rnd.shuffle(perm)
    w = rnd.randrange(200)
    text = []
    for _ in range(n_rows + 4):
        text.append(w)
        w = perm[w] if rnd.random() < 0.75 else rnd.randrange(200)
    return [text[i:i + 5] for i in range(n_rows)]


def skipgram(dict_size=2073, width=16):
    pairs = []
    for r in imikolov():
        pairs.append((r[2], r[3]))
        pairs.append((r[2], r[1]))
    counts = [0] * dict_size
    for _, ctx in pairs:
        counts[ctx] += 1
    # Huffman tree over the words (count + 1, so every word has a leaf): leaves are 0..dict_size-1,
    # inner nodes dict_size.. in merge order; ties broken by the smaller id (heapq on tuples)
    heap = [(counts[w] + 1, w) for w in range(dict_size)]
    heapq.heapify(heap)
    parent, bit = {}, {}
    nxt = dict_size
    while len(heap) > 1:
        ca, a = heapq.heappop(heap)
        cb, b = heapq.heappop(heap)
        parent[a], bit[a] = nxt, 0
        parent[b], bit[b] = nxt, 1
        heapq.heappush(heap, (ca + cb, nxt))
        nxt += 1
    root = nxt - 1
    paths = {}
    for w in range(dict_size):
        nodes, bits, v = [], [], w
        while v != root:
            # inner node ids from 0 at the root down: root - id
            nodes.append(root - parent[v])
            bits.append(bit[v])
            v = parent[v]
        if len(nodes) > width:
            raise SystemExit("skipgram: a Huffman path of %d nodes is longer than %d" % (len(nodes), width))
        paths[w] = (nodes + [-1] * (width - len(nodes)), bits + [0] * (width - len(bits)))
    return [[c, ctx] + paths[ctx][0] + paths[ctx][1] for c, ctx in pairs]


def cifar(n_rows=256, seed=3):
    rnd = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        label = rnd.randrange(10)
        ch, py, px = label % 3, (label // 3) % 4, label % 4
        img = []
        for c in range(3):
            for y in range(32):
                for x in range(32):
                    v = rnd.randrange(8)
                    if c == ch and y // 8 == py and x // 8 == px:
                        v += 8
                    img.append(v)
        rows.append(img + [label])
    return rows


def wmt(n_rows=64, max_len=16, n_head=8, seed=4):
    rnd = random.Random(seed)
    neg = "-1e9"
    rows = []
    for _ in range(n_rows):
        n = rnd.randrange(4, max_len)
        src = [rnd.randrange(3, 64) for _ in range(n)]
        trg = [0] + src
        lbl = src + [1]
        ls, lt = len(src), len(trg)
        pad = lambda s: s + [1] * (max_len - len(s))
        pos = lambda m: list(range(1, m + 1)) + [0] * (max_len - m)
        src_bias = [0 if j < ls else neg for _h in range(n_head) for _i in range(max_len) for j in range(max_len)]
        trg_bias = [neg if j > i else 0 for _h in range(n_head) for i in range(max_len) for j in range(max_len)]
        rows.append(pad(src) + pos(ls) + src_bias + pad(trg) + pos(lt) + trg_bias + src_bias +
                    pad(lbl) + [1] * len(lbl) + [0] * (max_len - len(lbl)))
    return rows


if __name__ == "__main__":
    write("imikolov_5gram.csv", imikolov())
    write("skipgram.csv.gz", skipgram())
    write("cifar_synth.csv.gz", cifar())
    write("wmt_synth.csv.gz", wmt())
