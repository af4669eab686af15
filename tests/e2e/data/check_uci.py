# The batches of fit_a_line_reader.fl's log against a numpy reading of the same housing.data, as
# Paddle's uci_housing.py reads it: normalised features, the first 80% of the rows train.
# Sums within 1e-4 relative (float32 sums of normalised values) plus 1e-3 absolute.
# Usage: check_uci.py HOUSING_DATA LOG shuffled(0|1)
import sys
import numpy as np

data = np.fromfile(sys.argv[1], sep=' ')
data = data.reshape(data.shape[0] // 14, 14)
mx, mn, avg = data.max(axis=0), data.min(axis=0), data.sum(axis=0) / data.shape[0]
for i in range(13):
    data[:, i] = (data[:, i] - avg[i]) / (mx[i] - mn[i])
offset = int(data.shape[0] * 0.8)
train, test = data[:offset], data[offset:]
shuffled = sys.argv[3] == '1'
lines = [l.split() for l in open(sys.argv[2])]
tr = [l for l in lines if l[0] == 'train']
te = [l for l in lines if l[0] == 'test']


def close(a, b, what):
    if abs(a - b) > 1e-4 * abs(b) + 1e-3:
        sys.exit('FAIL: %s: %r, numpy %r' % (what, a, b))


def batches(d):
    return [d[i:i + 20] for i in range(0, len(d), 20)]


if len(tr) != len(batches(train)) or len(te) != len(batches(test)):
    sys.exit('FAIL: %d train and %d test batches, numpy %d and %d' % (len(tr), len(te), len(batches(train)), len(batches(test))))
for k, (l, b) in enumerate(zip(tr, batches(train))):
    if int(l[2]) != len(b):
        sys.exit('FAIL: train batch %d: %s rows, numpy %d' % (k, l[2], len(b)))
    if not shuffled:
        close(float(l[3]), b[:, :13].sum(), 'train batch %d x sum' % k)
        close(float(l[4]), b[:, 13].sum(), 'train batch %d y sum' % k)
if shuffled:  # the same samples in another order: the epoch's sums agree, the batches' do not
    close(sum(float(l[3]) for l in tr), train[:, :13].sum(), 'shuffled epoch x sum')
    close(sum(float(l[4]) for l in tr), train[:, 13].sum(), 'shuffled epoch y sum')
    if all(abs(float(l[4]) - b[:, 13].sum()) < 1e-3 for l, b in zip(tr, batches(train))):
        sys.exit('FAIL: shuffle=1 read the samples in file order')
for k, (l, b) in enumerate(zip(te, batches(test))):
    if int(l[1]) != len(b):
        sys.exit('FAIL: test batch %d: %s rows, numpy %d' % (k, l[1], len(b)))
    close(float(l[2]), b[:, :13].sum(), 'test batch %d x sum' % k)
    close(float(l[3]), b[:, 13].sum(), 'test batch %d y sum' % k)
losses = [float(l[5]) for l in tr]
if not losses[-1] < 0.5 * losses[0]:
    sys.exit('FAIL: the loss went from %g to %g in an epoch: no training' % (losses[0], losses[-1]))
