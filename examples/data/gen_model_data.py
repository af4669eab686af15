#!/usr/bin/env python3
"""Synthetic stand-ins for the data of examples/fluid/models/ (io.csv and io.sequence format:
docs/data.md), each with the fields and dtypes the model reads and a signal it can learn.
Deterministic: the same files on every run. Standard library only.
Usage:  python3 gen_model_data.py [OUTDIR]   (default: this directory)

  ner.csv.gz   CoNLL-style named entities, as the NER model (ner.fl) reads them: word ids (a
               vocabulary of 400), a mark per word (1 where the word starts an entity: the
               "capitalised" flag), and IOB tags over 4 entity types (type t: B = 2t, I = 2t + 1;
               O = 8; 9 tags, as chunk_eval's IOB scheme with 4 chunk types numbers them). Words
               0..239 are entity words of type w % 4; an entity is a run of 1 to 3 of them, so a
               word's tag follows from the word and the one before it. 600 sentences of 3 to 20
               words.
  ocr.csv.gz   text-line images for the CRNN-CTC model (ocr_crnn_ctc.fl): 16x64 pixels (0..15,
               row-major, scaled by 1/15 when read), then the line's characters (classes 0..9, a
               sequence of 1 to 4). Each class has a fixed 16x16 glyph of random pixels, drawn in
               the line's first slots of 16 columns (the rest stay 0) over noise of 0..3. 400 lines.
"""
import gzip
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def write(name, rows):
    text = "".join(",".join(str(v) for v in r) + "\n" for r in rows).encode()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(gzip.compress(text, mtime=0))  # no time stamp: the same bytes on every run


def ner(n_rows=600, vocab=400, entity_words=240, types=4, seed=31):
    rng = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        words, marks, tags = [], [], []
        length = rng.randint(3, 20)
        while len(words) < length:
            if rng.random() < 0.3:
                t = rng.randrange(types)
                for k in range(rng.randint(1, 3)):
                    words.append(t + types * rng.randrange(entity_words // types))
                    marks.append(1 if k == 0 else 0)
                    tags.append(2 * t if k == 0 else 2 * t + 1)
            else:
                words.append(rng.randrange(entity_words, vocab))
                marks.append(0)
                tags.append(2 * types)
        words, marks, tags = words[:length], marks[:length], tags[:length]
        rows.append([" ".join(map(str, s)) for s in (words, marks, tags)])
    return rows


def ocr(n_rows=400, classes=10, height=16, width=64, slot=16, seed=47):
    rng = random.Random(seed)
    glyphs = [[[rng.choice((0, 12, 15)) for _ in range(slot)] for _ in range(height)] for _ in range(classes)]
    rows = []
    for _ in range(n_rows):
        text = [rng.randrange(classes) for _ in range(rng.randint(1, width // slot))]
        img = [[rng.randint(0, 3) for _ in range(width)] for _ in range(height)]
        for k, ch in enumerate(text):
            for y in range(height):
                for x in range(slot):
                    img[y][k * slot + x] = max(img[y][k * slot + x], glyphs[ch][y][x])
        rows.append([v for line in img for v in line] + [" ".join(map(str, text))])
    return rows


if __name__ == "__main__":
    write("ner.csv.gz", ner())
    write("ocr.csv.gz", ocr())
