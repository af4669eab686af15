"""Reads aclImdb_v1.tar.gz as Paddle's paddle.dataset.imdb does (tokenize, build_dict,
reader_creator) and checks the lines imdb_seqs.fl printed: the dicts' sizes and ids, and for each
batch of 500 reviews of train and test, its count, the sum of its word ids, its number of words,
the sum of its first words, the first review's length and the sum of its labels.
Usage: check_imdb.py TGZ LOG"""
import collections
import re
import string
import sys
import tarfile

import check_common


def tokenize(path, pattern):
    with tarfile.open(path) as tarf:
        tf = tarf.next()
        while tf is not None:
            if bool(pattern.match(tf.name)):
                yield tarf.extractfile(tf).read().rstrip(b'\n\r').translate(
                    None, string.punctuation.encode('latin-1')).lower().split()
            tf = tarf.next()


def build_dict(path, pattern, cutoff):
    word_freq = collections.defaultdict(int)
    for doc in tokenize(path, pattern):
        for word in doc:
            word_freq[word] += 1
    word_freq = [x for x in word_freq.items() if x[1] > cutoff]
    dictionary = sorted(word_freq, key=lambda x: (-x[1], x[0]))
    word_idx = {w: i for i, (w, _) in enumerate(dictionary)}
    word_idx[b'<unk>'] = len(dictionary)
    return word_idx


def samples(path, part, word_idx):
    unk = word_idx[b'<unk>']
    out = []
    for label, kind in ((0, 'pos'), (1, 'neg')):
        for doc in tokenize(path, re.compile(r"aclImdb/%s/%s/.*\.txt$" % (part, kind))):
            out.append(([word_idx.get(w, unk) for w in doc], label))
    return out


def main():
    path = sys.argv[1]
    d = build_dict(path, re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"), 150)
    want = ['dict %d' % len(d)]
    for w in ['the', 'great', 'awful', 'br', '<unk>']:
        want.append('id %s %d' % (w, d[w.encode()]))
    want.append('dict_test_pos %d' % len(build_dict(path, re.compile(r"aclImdb/test/pos/.*\.txt$"), 100)))
    for part in ('train', 'test'):
        s = samples(path, part, d)
        for i in range(0, len(s), 500):
            b = s[i:i + 500]
            want.append('%s %d %d %d %d %d %d' % (part, len(b), sum(sum(x) for x, _ in b), sum(len(x) for x, _ in b),
                                                sum(x[0] for x, _ in b), len(b[0][0]), sum(l for _, l in b)))
    check_common.compare(sys.argv[2], want)


main()
