"""Reads wmt14.tgz and wmt16.tar.gz as Paddle's paddle.dataset.wmt14 and wmt16 do (their dicts
and reader_creators; wmt16's dicts built as its __build_dict writes them) and checks the lines
wmt_seqs.fl printed: the dicts' sizes and some entries, and for each batch of 500 pairs, its count
and the sums and lengths of its three fields; and wmt14's test batches' source words alone.
Usage: check_wmt.py CACHE_DIR LOG"""
import collections
import sys
import tarfile

import check_common


def wmt14_dicts(path, size):
    out = []
    with tarfile.open(path) as f:
        for suffix in ('src.dict', 'trg.dict'):
            names = [m.name for m in f if m.name.endswith(suffix)]
            assert len(names) == 1
            d = {}
            for i, line in enumerate(f.extractfile(names[0])):
                if i >= size:
                    break
                d[line.strip().decode()] = i
            out.append(d)
    return out


def wmt14(path, part, size):
    src, trg = wmt14_dicts(path, size)
    with tarfile.open(path) as f:
        for name in [m.name for m in f if m.name.endswith(part)]:
            for line in f.extractfile(name):
                sp = line.decode().strip().split('\t')
                if len(sp) != 2:
                    continue
                s = [src.get(w, 2) for w in ['<s>'] + sp[0].split() + ['<e>']]
                t = [trg.get(w, 2) for w in sp[1].split()]
                if len(s) > 80 or len(t) > 80:
                    continue
                yield s, [trg['<s>']] + t, t + [trg['<e>']]


def wmt16_dict(path, lang, size):
    size = min(size, 11250 if lang == 'en' else 19220)
    count = collections.defaultdict(int)
    with tarfile.open(path) as f:
        for line in f.extractfile('wmt16/train'):
            sp = line.decode().strip().split('\t')
            if len(sp) != 2:
                continue
            for w in (sp[0] if lang == 'en' else sp[1]).split():
                count[w] += 1
    words = ['<s>', '<e>', '<unk>']
    for idx, (w, _) in enumerate(sorted(count.items(), key=lambda x: x[1], reverse=True)):
        if idx + 3 == size:
            break
        words.append(w)
    return {w: i for i, w in enumerate(words)}


def wmt16(path, part, ssize, tsize, lang):
    src = wmt16_dict(path, lang, ssize)
    trg = wmt16_dict(path, 'de' if lang == 'en' else 'en', tsize)
    bos, eos, unk = src['<s>'], src['<e>'], src['<unk>']
    col = 0 if lang == 'en' else 1
    with tarfile.open(path) as f:
        for line in f.extractfile(part):
            sp = line.decode().strip().split('\t')
            if len(sp) != 2:
                continue
            s = [bos] + [src.get(w, unk) for w in sp[col].split()] + [eos]
            t = [trg.get(w, unk) for w in sp[1 - col].split()]
            yield s, [bos] + t, t + [eos]


def main():
    d = sys.argv[1]
    p14, p16 = d + '/wmt14/wmt14.tgz', d + '/wmt16/wmt16.tar.gz'
    src, trg = wmt14_dicts(p14, 30)
    rs, rt = {v: k for k, v in src.items()}, {v: k for k, v in trg.items()}
    want = ['wmt14 dicts %d %d %s %s' % (len(rs), len(rt), rs[3], rt[29]), 'wmt14 s5 %d' % src['s5']]
    en, de = wmt16_dict(p16, 'en', 20), wmt16_dict(p16, 'de', 25)
    want.append('wmt16 dicts %d %d %d %s' % (len(en), len(de), en['e0'], {v: k for k, v in de.items()}[3]))
    for name, samples in [('wmt14.train', wmt14(p14, 'train/train', 30)), ('wmt14.test', wmt14(p14, 'test/test', 30)),
                          ('wmt16.train', wmt16(p16, 'wmt16/train', 20, 25, 'en')),
                          ('wmt16.validation', wmt16(p16, 'wmt16/val', 20, 25, 'de')),
                          ('wmt16.test', wmt16(p16, 'wmt16/test', 30, 15, 'en'))]:
        s = list(samples)
        for i in range(0, len(s), 500):
            b = s[i:i + 500]
            want.append('%s %d %s' % (name, len(b), ' '.join(
                ['%d' % sum(sum(x[f]) for x in b) for f in range(3)] +
                ['%d' % sum(len(x[f]) for x in b) for f in range(3)])))
    s = list(wmt14(p14, 'test/test', 30))
    for i in range(0, len(s), 500):
        want.append('wmt14.test src %d %d' % (len(s[i:i + 500]), sum(sum(x[0]) for x in s[i:i + 500])))
    check_common.compare(sys.argv[2], want)


main()
