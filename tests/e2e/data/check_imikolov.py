"""Reads simple-examples.tgz as Paddle's paddle.dataset.imikolov does (build_dict, the n-gram
reader, DataType.SEQ's) and checks the lines imikolov_grams.fl printed: the dict's size and ids,
the first 8 5-grams of train, the 3-grams of test batch by batch (count and sum of ids), and
test's sequences with n = -1, 21 and 20 batch by batch (count, sums of src and trg, the first
sequence's length, the offset after the last).
Usage: check_imikolov.py TGZ LOG"""
import collections
import sys
import tarfile

import check_common

TRAIN = './simple-examples/data/ptb.train.txt'
VALID = './simple-examples/data/ptb.valid.txt'


def word_count(f, word_freq):
    for l in f:
        for w in l.strip().split():
            word_freq[w] += 1
        word_freq[b'<s>'] += 1
        word_freq[b'<e>'] += 1
    return word_freq


def build_dict(tf, min_word_freq):
    word_freq = word_count(tf.extractfile(VALID), word_count(tf.extractfile(TRAIN), collections.defaultdict(int)))
    word_freq.pop(b'<unk>', None)
    kept = sorted([x for x in word_freq.items() if x[1] > min_word_freq], key=lambda x: (-x[1], x[0]))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx[b'<unk>'] = len(kept)
    return word_idx


def grams(tf, name, word_idx, n):
    unk = word_idx[b'<unk>']
    for l in tf.extractfile(name):
        l = [b'<s>'] + l.strip().split() + [b'<e>']
        if len(l) >= n:
            l = [word_idx.get(w, unk) for w in l]
            for i in range(n, len(l) + 1):
                yield tuple(l[i - n:i])


def seqs(tf, name, word_idx, n):
    unk = word_idx[b'<unk>']
    for l in tf.extractfile(name):
        l = [word_idx.get(w, unk) for w in l.strip().split()]
        src_seq = [word_idx[b'<s>']] + l
        trg_seq = l + [word_idx[b'<e>']]
        if n > 0 and len(src_seq) > n:
            continue
        yield src_seq, trg_seq


def main():
    tf = tarfile.open(sys.argv[1])
    d = build_dict(tf, 50)
    want = ['dict %d' % len(d)]
    for w in ['<s>', '<e>', 'the', 'r0', 'r299', '<unk>']:
        want.append('id %s %d' % (w, d[w.encode()]))
    want.append('dict5000 %d' % len(build_dict(tf, 5000)))
    g = grams(tf, TRAIN, d, 5)
    for _ in range(8):
        want.append('train5 %d %d %d %d %d' % next(g))
    t = list(grams(tf, VALID, d, 3))
    for i in range(0, len(t), 1000):
        b = t[i:i + 1000]
        want.append('test3 %d %d' % (len(b), sum(sum(x) for x in b)))
    for n in (-1, 21, 20):
        s = list(seqs(tf, VALID, d, n))
        for i in range(0, len(s), 150):
            b = s[i:i + 150]
            want.append('seq%d %d %d %d %d %d' % (n, len(b), sum(sum(x) for x, _ in b), sum(sum(y) for _, y in b),
                                                len(b[0][0]), sum(len(x) for x, _ in b)))
    check_common.compare(sys.argv[2], want)
    if len(d) < 300 or d[b'<unk>'] != len(d) - 1:
        sys.exit('the dict is not the synthetic set\'s')


main()
