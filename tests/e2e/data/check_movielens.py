# movielens_sums.fl's lines against Paddle's movielens.py reading of the same zip (zipfile,
# Latin-1, its title pattern, age_table, numpy.random.seed(0) and random() < 0.1 for the test
# part), with the title words and categories numbered by their sorted UTF-8 bytes as fluidc
# numbers them (Paddle's order is a Python set's): every sum exactly, the scores' within 1e-3.
# Usage: check_movielens.py ZIP LOG
import re
import sys
import zipfile
import numpy as np

age_table = [1, 18, 25, 35, 45, 50, 56]
pattern = re.compile(r'^(.*)\((\d+)\)$')
movies, users, words, cats = {}, {}, set(), set()
with zipfile.ZipFile(file=sys.argv[1]) as package:
    with package.open('ml-1m/movies.dat') as f:
        for line in f:
            movie_id, title, categories = line.decode(encoding='latin').strip().split('::')
            categories = categories.split('|')
            cats.update(categories)
            title = pattern.match(title).group(1)
            movies[int(movie_id)] = (int(movie_id), categories, title)
            words.update(w.lower() for w in title.split())
    with package.open('ml-1m/users.dat') as f:
        for line in f:
            uid, gender, age, job, _ = line.decode(encoding='latin').strip().split('::')
            users[int(uid)] = [int(uid), 0 if gender == 'M' else 1, age_table.index(int(age)), int(job)]
    title_dict = {w: i for i, w in enumerate(sorted(words, key=lambda w: w.encode()))}
    cat_dict = {c: i for i, c in enumerate(sorted(cats, key=lambda c: c.encode()))}

    def reader(is_test):
        np.random.seed(0)
        with package.open('ml-1m/ratings.dat') as rating:
            for line in rating:
                line = line.decode(encoding='latin')
                if (np.random.random() < 0.1) == is_test:
                    uid, mov_id, r, _ = line.strip().split('::')
                    m = movies[int(mov_id)]
                    yield users[int(uid)] + [m[0], [cat_dict[c] for c in m[1]],
                                             [title_dict[w.lower()] for w in m[2].split()], float(r) * 2 - 5.0]

    want = ['meta %d %d %d %d %d %d' % (max(users), max(movies), max(u[3] for u in users.values()), len(cat_dict),
                                        len(title_dict), len(age_table))]
    for part in ['train', 'test']:
        s = list(reader(part == 'test'))
        for i in range(0, len(s), 1000):
            b = s[i:i + 1000]
            f = [sum(x[k] for x in b) for k in range(5)]
            want.append('%s %d %d %d %d %d %d %d %d %d %.1f %d %d' % (
                part, i // 1000, len(b), f[0], f[1], f[2], f[3], f[4], sum(sum(x[5]) for x in b),
                sum(sum(x[6]) for x in b), sum(x[7] for x in b), sum(len(x[5]) for x in b), sum(len(x[6]) for x in b)))
got = [l.rstrip('\n') for l in open(sys.argv[2])]
if len(got) != len(want):
    sys.exit('FAIL: %d lines, expected %d:\n%s' % (len(got), len(want), '\n'.join(want)))
for g, w in zip(got, want):
    gs, ws = g.split(), w.split()
    if len(gs) != len(ws) or any(a != b for k, (a, b) in enumerate(zip(gs, ws)) if k != 10) or \
            (len(gs) > 10 and abs(float(gs[10]) - float(ws[10])) > 1e-3):
        sys.exit('FAIL: %s\n  Paddle: %s' % (g, w))
