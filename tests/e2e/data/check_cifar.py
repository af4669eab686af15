# cifar_sums.fl's lines against Paddle's cifar.py reading of the same archives (its reader_creator:
# tarfile, pickle.load(encoding='bytes'), numpy, sample / 255.0 as float32): per batch of 150 the
# pixel sum within 1e-5 relative plus 1e-2 absolute, min and max within 1e-6, the label sum and
# the batch's size exactly.
# Usage: check_cifar.py CIFAR_DIR LOG
#        check_cifar.py --repickle SRC_DIR DST_DIR PROTOCOL: the archives again, each pickle
#        written by Python 3's pickle at PROTOCOL (numpy's own reduce of the arrays)
import pickle
import sys
import tarfile
import numpy as np

FILES = {'10': 'cifar-10-python.tar.gz', '100': 'cifar-100-python.tar.gz'}
PARTS = [('train10', '10', 'data_batch'), ('test10', '10', 'test_batch'), ('train100', '100', 'train'),
         ('test100', '100', 'test')]


def samples(path, sub_name):
    with tarfile.open(path, mode='r') as f:
        for name in [m.name for m in f if sub_name in m.name]:
            batch = pickle.load(f.extractfile(name), encoding='bytes')
            labels = batch.get(b'labels', batch.get(b'fine_labels', None))
            for sample, label in zip(batch[b'data'], labels):
                yield (sample / 255.0).astype(np.float32), int(label)


if sys.argv[1] == '--repickle':
    src, dst, proto = sys.argv[2], sys.argv[3], int(sys.argv[4])
    for f in FILES.values():
        with tarfile.open(src + '/' + f) as tin, tarfile.open(dst + '/' + f, 'w:gz') as tout:
            for m in tin:
                data = pickle.dumps(pickle.load(tin.extractfile(m), encoding='bytes'), protocol=proto)
                info = tarfile.TarInfo(m.name)
                info.size = len(data)
                import io
                tout.addfile(info, io.BytesIO(data))
    sys.exit(0)

d = sys.argv[1]
want = []
for part, which, sub in PARTS:
    s = list(samples(d + '/' + FILES[which], sub))
    for i in range(0, len(s), 150):
        b = s[i:i + 150]
        x = np.array([p for p, _ in b], dtype=np.float64)
        want.append((part, i // 150, len(b), x.sum(), x.min(), x.max(), sum(l for _, l in b)))
lines = [l.split() for l in open(sys.argv[2])]
if len(lines) != len(want):
    sys.exit('FAIL: %d batches, expected %d' % (len(lines), len(want)))
for l, w in zip(lines, want):
    if l[0] != w[0] or int(l[1]) != w[1] or int(l[2]) != w[2] or int(l[6]) != w[6]:
        sys.exit('FAIL: %s, Paddle %r' % (' '.join(l), w))
    if abs(float(l[3]) - w[3]) > 1e-5 * abs(w[3]) + 1e-2:
        sys.exit('FAIL: %s %s pixel sum %s, Paddle %r' % (l[0], l[1], l[3], w[3]))
    if abs(float(l[4]) - w[4]) > 1e-6 or abs(float(l[5]) - w[5]) > 1e-6:
        sys.exit('FAIL: %s %s pixels in [%s, %s], Paddle [%r, %r]' % (l[0], l[1], l[4], l[5], w[4], w[5]))
