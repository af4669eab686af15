"""Reads the conll05st cache folder as Paddle's paddle.dataset.conll05 does (load_dict,
load_label_dict, corpus_reader, reader_creator; the label dict's tags in the order of their
first line, where Paddle walks a set) and checks the lines conll05_seqs.fl printed: the dicts'
sizes and some ids, the embedding's path, and for each batch of 200 samples of test(), its count
and the sums of its nine fields.
Usage: check_conll05.py DIR LOG"""
import gzip
import sys
import tarfile

import check_common


def load_dict(path):
    d = {}
    with open(path) as f:
        for i, line in enumerate(f):
            d[line.strip()] = i
    return d


def load_label_dict(path):
    tags = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith(("B-", "I-")) and line[2:] not in tags:
                tags.append(line[2:])
    d = {}
    for t in tags:
        d["B-" + t] = len(d)
        d["I-" + t] = len(d)
    d["O"] = len(d)
    return d


def corpus(path):
    tf = tarfile.open(path)
    words = gzip.GzipFile(fileobj=tf.extractfile('conll05st-release/test.wsj/words/test.wsj.words.gz'))
    props = gzip.GzipFile(fileobj=tf.extractfile('conll05st-release/test.wsj/props/test.wsj.props.gz'))
    sentences, one_seg = [], []
    for word, label in zip(words, props):
        word = word.strip().decode()
        label = label.strip().decode().split()
        if len(label) == 0:
            labels = [[x[i] for x in one_seg] for i in range(len(one_seg[0]))]
            verbs = [x for x in labels[0] if x != '-']
            for i, lbl in enumerate(labels[1:]):
                cur, inb, seq = 'O', False, []
                for l in lbl:
                    if l == '*' and not inb:
                        seq.append('O')
                    elif l == '*' and inb:
                        seq.append('I-' + cur)
                    elif l == '*)':
                        seq.append('I-' + cur)
                        inb = False
                    elif l.find('(') != -1 and l.find(')') != -1:
                        cur = l[1:l.find('*')]
                        seq.append('B-' + cur)
                        inb = False
                    elif l.find('(') != -1:
                        cur = l[1:l.find('*')]
                        seq.append('B-' + cur)
                        inb = True
                    else:
                        raise RuntimeError('Unexpected label: %s' % l)
                yield sentences, verbs[i], seq
            sentences, one_seg = [], []
        else:
            sentences.append(word)
            one_seg.append(label)


def samples(d):
    wd, vd, ld = load_dict(d + '/wordDict.txt'), load_dict(d + '/verbDict.txt'), load_label_dict(d + '/targetDict.txt')
    for sentence, predicate, labels in corpus(d + '/conll05st-tests.tar.gz'):
        n = len(sentence)
        vi = labels.index('B-V')
        mark = [0] * n
        ctx = []
        for k in range(-2, 3):
            at = vi + k
            ctx.append('bos' if at < 0 else 'eos' if at >= n else sentence[at])
            if 0 <= at < n:
                mark[at] = 1
        yield ([[wd.get(w, 0) for w in sentence]] + [[wd.get(c, 0)] * n for c in ctx] +
               [[vd.get(predicate)] * n, mark, [ld.get(w) for w in labels]])


def main():
    d = sys.argv[1]
    wd, vd, ld = load_dict(d + '/wordDict.txt'), load_dict(d + '/verbDict.txt'), load_label_dict(d + '/targetDict.txt')
    want = ['dicts %d %d %d' % (len(wd), len(vd), len(ld)),
            'ids %d %d %d %d' % (wd['dog'], vd['sold'], ld['B-A1'], ld['O']),
            'emb %s/emb' % d]
    s = list(samples(d))
    for i in range(0, len(s), 200):
        b = s[i:i + 200]
        want.append('batch %d %s' % (len(b), ' '.join('%d' % sum(sum(x[f]) for x in b) for f in range(9))))
    check_common.compare(sys.argv[2], want)


main()
