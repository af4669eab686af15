#!/usr/bin/env python3
"""A small synthetic detection set for the detection examples of examples/fluid/ (ssd_mobilenet.fl,
yolov3.fl, faster_rcnn_rpn.fl): images of coloured squares on a dark noisy background, the class
of a square its colour. Deterministic: the same file on every run. Standard library only.
Usage:  python3 gen_det_data.py [OUTDIR]   (default: this directory)

  det_boxes.csv.gz   one image a row, 64 images of 3x32x32 with 1 to 3 squares each (sides 8 to
                     16 pixels, overlapping another by at most a third of the smaller), in the
                     columns the three programs read (docs/detection.md, "Boxes"):
      0..3071        the pixels, channel by channel, row by row: integers 0..15 (scale by 1/15);
                     a square of class 1, 2 or 3 is bright (12..15) in channel 0, 1 or 2 (red,
                     green, blue) and dark elsewhere, the background 0..3
      3072           gt_box: the squares as normalized corner boxes, 4 numbers each
                     (xmin, ymin, xmax, ymax in [0, 1]: pixel edges over 32), one sequence a row
      3073           gt_label: their classes 1..3 (0 is SSD's background), one sequence a row
      3074           gt_box_px: the squares as pixel boxes (both edges counted: x2 = x1 + side - 1)
      3075           is_crowd: 0 for each square (a sequence, cut as gt_box_px)
      3076..3078     im_info: height, width, scale (32, 32, 1)
      3079..3090     yolo_box: 3 boxes of 4 numbers, centre x, centre y, width, height as fractions
                     of the image (YOLOv3's form), the squares then zeros (padding)
      3091..3093     yolo_label: their classes 0..2 (YOLOv3 counts from 0), then zeros
"""
import gzip
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
SIZE = 32
MAX_BOXES = 3


def overlap(a, b):
    """The intersection of squares a and b (x, y, side) over the smaller one's area."""
    iw = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    ih = min(a[1] + a[2], b[1] + b[2]) - max(a[1], b[1])
    return max(iw, 0) * max(ih, 0) / min(a[2], b[2]) ** 2


def image(rnd):
    """(pixels [3][SIZE][SIZE], [(x, y, side, class 1..3)])"""
    px = [[[rnd.randrange(4) for _ in range(SIZE)] for _ in range(SIZE)] for _ in range(3)]
    boxes = []
    want = rnd.randrange(1, MAX_BOXES + 1)
    while len(boxes) < want:
        side = rnd.randrange(8, 17)
        b = (rnd.randrange(SIZE - side + 1), rnd.randrange(SIZE - side + 1), side, rnd.randrange(1, 4))
        if all(overlap(b, o) <= 1 / 3 for o in boxes):
            boxes.append(b)
    for x, y, side, cls in boxes:
        for c in range(3):
            for r in range(y, y + side):
                for q in range(x, x + side):
                    px[c][r][q] = rnd.randrange(12, 16) if c == cls - 1 else rnd.randrange(2)
    return px, boxes


def num(v):
    """A short exact decimal (the fractions here are multiples of 1/64)."""
    return ("%.6f" % v).rstrip("0").rstrip(".")


def rows(n_images=64, seed=5):
    rnd = random.Random(seed)
    out = []
    for _ in range(n_images):
        px, boxes = image(rnd)
        row = [v for ch in px for line in ch for v in line]
        row.append(" ".join(num(v) for x, y, s, _ in boxes for v in (x / SIZE, y / SIZE, (x + s) / SIZE, (y + s) / SIZE)))
        row.append(" ".join(str(c) for *_, c in boxes))
        row.append(" ".join(str(v) for x, y, s, _ in boxes for v in (x, y, x + s - 1, y + s - 1)))
        row.append(" ".join("0" for _ in boxes))
        row += [SIZE, SIZE, 1]
        yolo = [num(v) for x, y, s, _ in boxes for v in ((x + s / 2) / SIZE, (y + s / 2) / SIZE, s / SIZE, s / SIZE)]
        row += yolo + ["0"] * (4 * MAX_BOXES - len(yolo))
        row += [c - 1 for *_, c in boxes] + [0] * (MAX_BOXES - len(boxes))
        out.append(row)
    return out


def write(name, data):
    text = "".join(",".join(str(v) for v in r) + "\n" for r in data).encode()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(gzip.compress(text, mtime=0))  # no time stamp: the same bytes on every run


if __name__ == "__main__":
    write("det_boxes.csv.gz", rows())
