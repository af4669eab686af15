# mnist_sums.fl's lines against numpy's reading of the same gzip idx files, scaled as Paddle's
# mnist.py scales them (p / 255 * 2 - 1): pixel sums within 1e-5 relative plus 1e-2 absolute
# (float32 sums of 78400 values), min and max within 1e-6, label sums exactly.
# Usage: check_mnist.py MNIST_DIR LOG
import gzip
import sys
import numpy as np

d = sys.argv[1]
img = np.frombuffer(gzip.open(d + '/t10k-images-idx3-ubyte.gz').read(), dtype=np.uint8, offset=16)
img = img.reshape(-1, 784).astype(np.float64) / 255.0 * 2.0 - 1.0
lab = np.frombuffer(gzip.open(d + '/t10k-labels-idx1-ubyte.gz').read(), dtype=np.uint8, offset=8).astype(np.int64)
lines = [l.split() for l in open(sys.argv[2])]
if len(lines) != 3:
    sys.exit('FAIL: %d batches, expected 3' % len(lines))
for k, l in enumerate(lines):
    b = slice(100 * k, 100 * (k + 1))
    want = img[b].sum()
    if int(l[0]) != k or int(l[1]) != 100:
        sys.exit('FAIL: batch %d: %s' % (k, ' '.join(l)))
    if abs(float(l[2]) - want) > 1e-5 * abs(want) + 1e-2:
        sys.exit('FAIL: batch %d pixel sum %s, numpy %r' % (k, l[2], want))
    if abs(float(l[3]) - img[b].min()) > 1e-6 or abs(float(l[4]) - img[b].max()) > 1e-6:
        sys.exit('FAIL: batch %d pixels in [%s, %s], numpy [%r, %r]' % (k, l[3], l[4], img[b].min(), img[b].max()))
    if int(l[5]) != lab[b].sum():
        sys.exit('FAIL: batch %d label sum %s, numpy %d' % (k, l[5], lab[b].sum()))
