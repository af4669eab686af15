#!/usr/bin/env python3
"""Synthetic stand-ins for the sequence data sets of examples/fluid/ (io.sequence format).

A sequence field is one CSV column of space-separated ids (docs/data.md); each set has the
fields, dtypes and dictionary sizes of the data the Fluid program reads, sequences of mixed lengths
(1, 2 and up to 60-100 tokens), and a signal a model can learn, so a falling loss (and, for
sentiment, an accuracy well above chance) means the program trains. Deterministic: the same files on
every run. Standard library only.  Usage:  python3 gen_seq_data.py [OUTDIR]   (default: this
directory)

  sentiment.csv.gz   words (ids < 5147, the size of the synthetic dictionary), label 0/1. Of the
                     words, 150 are positive and 150 negative; a review's label says which kind it
                     holds more of (a tie: one more word decides), with 5% of labels flipped.
  srl.csv.gz         label_semantic_roles' nine sequences of one sentence, all of one length:
                     word (< 5000), predicate (< 300, the verb repeated), ctx_n2, ctx_n1, ctx_0, ctx_p1,
                     ctx_p2 (the words around the verb, repeated), mark (1 within 2 words of the
                     verb), target (< 59: IOB tags of 29 chunk types). A word's chunk type is its
                     id mod 30 (type 29: outside, O); a run of one type is one chunk (B then I).
  mt.csv.gz          machine translation: src (ids 3..999), trg (<s> = 0 then the translation),
                     trg_next (the translation then <e> = 1). The translation maps each source word
                     through a fixed permutation and reverses the order.
  mt_decode.csv.gz   machine translation's decoding input: the first 200 sources of mt.csv.gz, each
                     with the start of its beam search as Fluid's test feeds it (init_ids: one
                     sub-sequence holding <s> = 0; init_scores: one holding 0.0), nested sequences.
  movielens.csv.gz   recommender_system: user_id, gender_id (0/1), age_id (< 7), job_id (< 21),
                     movie_id, category_id (a sequence < 19), movie_title (a sequence < 5175),
                     score (1..5 as a float), with MovieLens-1M's dictionary sizes (6041 users, 3953
                     movies) and 400 users rating 300 movies: 4 or 5 when the movie has the
                     category the user's job likes (one per job), else 1 or 2.
  ctr_seq.csv.gz     dist_ctr with LoD inputs: dnn_data (sequence of ids < 1000), lr_data (sequence
                     < 1000), click (0/1): clicks are likely when the ids hold many of 50 'good' ids.
  simnet.csv.gz      dist_simnet_bow: query, pos_title, neg_title (sequences of ids < 1000), label
                     (0, read and unused as in Fluid's test): the positive title shares words with
                     the query, the negative one does not.
"""
import gzip
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def write(name, rows):
    text = "".join(",".join(" ".join(map(str, v)) if isinstance(v, list) else str(v) for v in r) + "\n"
                   for r in rows).encode()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(gzip.compress(text, mtime=0))  # no time stamp: the same bytes on every run


def length(rnd, hi):
    """Mixed lengths: 1 and 2 appear, the rest spread to hi."""
    x = rnd.random()
    return 1 if x < 0.05 else 2 if x < 0.1 else rnd.randrange(3, hi + 1)


def sentiment(n_rows=4000, dict_size=5147, seed=11):
    rnd = random.Random(seed)
    words = list(range(dict_size))
    rnd.shuffle(words)
    pos, neg = words[:150], words[150:300]
    rows = []
    for _ in range(n_rows):
        n = length(rnd, 80)
        s = [rnd.choice(pos) if rnd.random() < 0.15 else rnd.choice(neg) if rnd.random() < 0.18
             else rnd.choice(words[300:]) for _ in range(n)]
        p = sum(w in pos for w in s) - sum(w in neg for w in s)
        if p == 0:
            extra = rnd.choice(pos + neg)
            s.append(extra)
            p = 1 if extra in pos else -1
        label = 1 if p > 0 else 0
        if rnd.random() < 0.05:
            label = 1 - label
        rows.append([s, label])
    return rows


def srl(n_rows=1500, word_dict=5000, verb_dict=300, seed=12):
    rnd = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        n = length(rnd, 40)
        s = [rnd.randrange(word_dict) for _ in range(n)]
        v = rnd.randrange(n)
        ctx = [s[min(max(v + d, 0), n - 1)] for d in (-2, -1, 0, 1, 2)]
        mark = [1 if abs(i - v) <= 2 else 0 for i in range(n)]
        tags, prev = [], None
        for w in s:
            t = w % 30
            if t == 29:
                tags.append(58)  # O
                prev = None
            else:
                tags.append(2 * t + (1 if t == prev else 0))  # B-t = 2t, I-t = 2t + 1
                prev = t
        rows.append([s, [rnd.randrange(verb_dict)] * n] + [[c] * n for c in ctx] + [mark, tags])
    return rows


def mt(n_rows=2000, dict_size=1000, seed=13):
    rnd = random.Random(seed)
    perm = list(range(3, dict_size))
    rnd.shuffle(perm)
    rows = []
    for _ in range(n_rows):
        n = length(rnd, 20)
        src = [rnd.randrange(3, dict_size) for _ in range(n)]
        out = [perm[w - 3] for w in reversed(src)]
        rows.append([src, [0] + out, out + [1]])
    return rows


def mt_decode(n_rows=200):
    return [[src, 0, 0.0] for src, _, _ in mt()[:n_rows]]


def movielens(n_rows=5000, n_users=400, n_movies=300, seed=14):
    rnd = random.Random(seed)
    users = [(rnd.randrange(2), rnd.randrange(7), rnd.randrange(21)) for _ in range(n_users)]
    movies = [(sorted(rnd.sample(range(19), rnd.choice([1, 1, 2, 3]))),
               [rnd.randrange(5175) for _ in range(length(rnd, 8))]) for _ in range(n_movies)]
    rows = []
    for _ in range(n_rows):
        user, movie = rnd.randrange(n_users), rnd.randrange(n_movies)
        gender, age, job = users[user]
        cats, title = movies[movie]
        taste = job % 19  # each job likes one category
        score = 1 + 3 * (taste in cats) + rnd.choice([0, 1])
        rows.append([user + 1, gender, age, job, movie + 1, cats, title, float(score)])
    return rows


def ctr_seq(n_rows=2000, dim=1000, seed=15):
    rnd = random.Random(seed)
    good = sorted(rnd.sample(range(dim), 50))
    rows = []
    for _ in range(n_rows):
        p_good = rnd.choice([0.02, 0.3])
        dnn = [rnd.choice(good) if rnd.random() < p_good else rnd.randrange(dim) for _ in range(length(rnd, 16))]
        lr = [rnd.choice(good) if rnd.random() < p_good else rnd.randrange(dim) for _ in range(length(rnd, 16))]
        score = sum(i in good for i in dnn + lr) - 0.12 * (len(dnn) + len(lr))
        rows.append([dnn, lr, 1 if score + rnd.gauss(0, 0.5) > 0 else 0])
    return rows


def simnet(n_rows=2000, dim=1000, seed=16):
    rnd = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        q = [rnd.randrange(dim) for _ in range(length(rnd, 10))]
        pos = [rnd.choice(q) if rnd.random() < 0.6 else rnd.randrange(dim) for _ in range(length(rnd, 12))]
        neg = [rnd.randrange(dim) for _ in range(length(rnd, 12))]
        rows.append([q, pos, neg, 0])
    return rows


if __name__ == "__main__":
    write("sentiment.csv.gz", sentiment())
    write("srl.csv.gz", srl())
    write("mt.csv.gz", mt())
    write("mt_decode.csv.gz", mt_decode())
    write("movielens.csv.gz", movielens())
    write("ctr_seq.csv.gz", ctr_seq())
    write("simnet.csv.gz", simnet())
